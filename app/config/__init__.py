"""The config file: agents, providers and server limits.

TOML (or the same structure as JSON). String values may reference ``${env:NAME}`` and
``${file:relative/path}`` (relative to the config file); ``$${`` writes a literal ``${``. Unknown keys,
bad values and missing env vars or files are errors that name the key path.
"""

from chatgate.config.loading import load_config, parse_config
from chatgate.config.model_settings import answer_tokens, setting_problems
from chatgate.config.reload import ConfigWatcher
from chatgate.config.schema import (
    BUILTIN_PROVIDER_NAMES,
    DEFAULT_AGENT_NAME,
    OLLAMA_DEFAULT_HOST,
    OPENAI_DEFAULT_BASE_URL,
    PLACEHOLDER,
    AgentConfig,
    AgentMCPConfig,
    ClientToolConfig,
    CodeConfig,
    Config,
    ContextConfig,
    JwtConfig,
    KeyConfig,
    LeakGuardMode,
    MCPServerConfig,
    ProviderConfig,
    ProviderKind,
    ProviderTimeouts,
    ServerSettings,
    ServerToolConfig,
    StoreSettings,
    SystemPromptConfig,
    SystemPromptPolicy,
    VariableConfig,
    VercelAIVersion,
    default_config,
    resolve_provider,
)

__all__ = [
    "BUILTIN_PROVIDER_NAMES",
    "DEFAULT_AGENT_NAME",
    "OLLAMA_DEFAULT_HOST",
    "OPENAI_DEFAULT_BASE_URL",
    "PLACEHOLDER",
    "AgentConfig",
    "AgentMCPConfig",
    "ClientToolConfig",
    "CodeConfig",
    "Config",
    "ConfigWatcher",
    "ContextConfig",
    "JwtConfig",
    "KeyConfig",
    "LeakGuardMode",
    "MCPServerConfig",
    "ProviderConfig",
    "ProviderKind",
    "ProviderTimeouts",
    "ServerSettings",
    "ServerToolConfig",
    "StoreSettings",
    "SystemPromptConfig",
    "SystemPromptPolicy",
    "VariableConfig",
    "VercelAIVersion",
    "answer_tokens",
    "default_config",
    "load_config",
    "parse_config",
    "resolve_provider",
    "setting_problems",
]

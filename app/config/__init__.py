"""The config file: agents, providers and server limits.

TOML (or the same structure as JSON). String values may reference ``${env:NAME}`` and
``${file:relative/path}`` (relative to the config file); ``$${`` writes a literal ``${``. Unknown keys,
bad values and missing env vars or files are errors that name the key path.
"""

from chatgate.config.loading import load_config, parse_config
from chatgate.config.schema import (
    BUILTIN_PROVIDER_NAMES,
    DEFAULT_AGENT_NAME,
    OLLAMA_DEFAULT_HOST,
    OPENAI_DEFAULT_BASE_URL,
    AgentConfig,
    ClientToolConfig,
    CodeConfig,
    Config,
    KeyConfig,
    ProviderConfig,
    ProviderKind,
    ProviderTimeouts,
    ServerSettings,
    ServerToolConfig,
    StoreSettings,
    SystemPromptConfig,
    TelemetrySettings,
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
    "AgentConfig",
    "ClientToolConfig",
    "CodeConfig",
    "Config",
    "KeyConfig",
    "ProviderConfig",
    "ProviderKind",
    "ProviderTimeouts",
    "ServerSettings",
    "ServerToolConfig",
    "StoreSettings",
    "SystemPromptConfig",
    "TelemetrySettings",
    "VariableConfig",
    "VercelAIVersion",
    "default_config",
    "load_config",
    "parse_config",
    "resolve_provider",
]

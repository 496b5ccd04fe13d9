"""Config rules that span keys, each problem naming the key path to fix.

At least one agent, one default agent; known providers and built-in models; provider settings of the right
kind; tools that import; template placeholders that have variables and files that exist; keys that name
existing agents and distinct secrets, and CORS ``"*"`` only without keys.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import Literal

from chatgate.config.model_settings import answer_tokens, setting_problems
from chatgate.config.operator_code import import_function
from chatgate.config.schema import (
    BUILTIN_MODELS,
    PLACEHOLDER,
    AgentConfig,
    Config,
    FallbackConfig,
    ProviderKind,
    SystemPromptConfig,
    resolve_provider,
)

__all__ = ["cross_checks"]

_TOOL_NAME = r"^[A-Za-z0-9_-]{1,64}$"


def cross_checks(config: Config, environ: Mapping[str, str]) -> list[str]:
    """Rules that span keys, each reported with the key path to fix."""
    problems = []
    if not config.agents:
        problems.append('agents: no agents are defined; add one, e.g. [agents.assistant] with model = "builtin:echo"')
    defaults = [name for name, agent in config.agents.items() if agent.default]
    for name in defaults[1:]:
        problems.append(f"agents.{name}.default: only one agent may be the default (also {defaults[0]})")
    for name, agent in config.agents.items():
        problems += _tool_problems(name, agent, config.base_dir)
        if agent.leak_guard.canary and agent.leak_guard_mode == "off":
            problems.append(
                f'agents.{name}.leak_guard.canary: the canary needs the guard on; set mode = "redact" or "stop"'
            )
        problems += _mcp_problems(name, agent, config)
        problems += _prompt_problems(f"agents.{name}.system_prompt", agent.system_prompt, config.base_dir)
        for prompt_name, prompt in agent.prompts.items():
            problems += _prompt_problems(f"agents.{name}.prompts.{prompt_name}", prompt, config.base_dir)
        if agent.provider_name == "builtin":
            if agent.model_name not in BUILTIN_MODELS:
                problems.append(
                    f"agents.{name}.model: the built-in provider has only {', '.join(sorted(BUILTIN_MODELS))}"
                )
            problems += _model_settings_problems(name, agent, "builtin")
            problems += _context_problems(name, agent, "builtin")
            continue
        try:
            provider = resolve_provider(config, agent.provider_name, environ)
        except ValueError as exc:
            problems.append(f"agents.{name}.model: {exc}")
            continue
        problems += _model_settings_problems(name, agent, provider.kind)
        problems += _context_problems(name, agent, provider.kind)
    for name, agent in config.agents.items():
        problems += _side_model_problems(
            f"agents.{name}.context.summary_model", agent.context.summary_model, config, environ
        )
        problems += _side_model_problems(f"agents.{name}.title_model", agent.title_model, config, environ)
        if agent.title_model is not None and (agent.conversations != "server" or not agent.titles):
            problems.append(
                f'agents.{name}.title_model: titles are written for stored threads; set conversations = "server"'
                " and titles = true, or remove it"
            )
        problems += _fallback_problems(name, agent, config, environ)
    problems += _key_problems(config)
    if "files" in config.model_fields_set and config.store_url is None:
        problems.append("files: uploads are kept in the store, and none is configured; set [store] url")
    return problems


def _key_problems(config: Config) -> list[str]:
    problems = []
    seen: dict[bytes, str] = {}
    for index, key in enumerate(config.keys):
        problems += [
            f"keys.{index}.agents: no agent named {agent!r} (key {key.id!r})"
            for agent in key.agents or ()
            if agent not in config.agents
        ]
        if key.digest in seen:  # the secret itself is never named
            problems.append(f"keys.{index}: key {key.id!r} has the same secret as key {seen[key.digest]!r}")
        seen.setdefault(key.digest, key.id)
    jwt = config.auth.jwt
    if jwt is not None:
        problems += [
            f"auth.jwt.agents: no agent named {agent!r}" for agent in jwt.agents or () if agent not in config.agents
        ]
    if (config.keys or jwt is not None) and "*" in config.server.cors_origins:
        problems.append(
            'server.cors_origins: "*" is allowed only without [[keys]] or [auth.jwt]; list the exact origins'
        )
    return problems


def _context_problems(agent_name: str, agent: AgentConfig, kind: ProviderKind | Literal["builtin"]) -> list[str]:
    where = f"agents.{agent_name}.context"
    context = agent.context
    problems = []
    if context.summary_model is not None and context.strategy != "summarize":
        problems.append(f'{where}.summary_model: only used with strategy = "summarize"; remove it or set that')
    if context.strategy == "summarize" and context.window is None:
        problems.append(f'{where}.strategy: "summarize" needs a window (a number of tokens, or "auto")')
    if context.window == "auto" and kind not in ("openai", "ollama"):
        problems.append(
            f'{where}.window: "auto" asks llama.cpp (/props) or Ollama (/api/show); the {kind} provider cannot tell,'
            " so give the window as a number of tokens"
        )
    answer = answer_tokens(agent.model_settings)
    if isinstance(context.window, int) and answer is not None and answer >= context.window:
        problems.append(
            f"{where}.window: {context.window} tokens leave no room for the prompt after the answer's"
            f" {answer} (model_settings); the window holds the prompt and the answer"
        )
    return problems


def _side_model_problems(where: str, model: str | None, config: Config, environ: Mapping[str, str]) -> list[str]:
    """A side call's model (``summary_model``, ``title_model``) is named as an agent's ``model`` is."""
    if model is None:
        return []
    provider_name, model_name = model.split(":", 1)
    if provider_name == "builtin":
        if model_name not in BUILTIN_MODELS:
            return [f"{where}: the built-in provider has only {', '.join(sorted(BUILTIN_MODELS))}"]
        return []
    try:
        resolve_provider(config, provider_name, environ)
    except ValueError as exc:
        return [f"{where}: {exc}"]
    return []


def _fallback_problems(name: str, agent: AgentConfig, config: Config, environ: Mapping[str, str]) -> list[str]:
    """Each deployment's and fallback's provider known, its model settings (its own, else the agent's) of its kind."""
    problems = []
    entries: list[tuple[str, int, FallbackConfig]]
    entries = [("deployments", index, entry) for index, entry in enumerate(agent.deployment_pool)]
    entries += [("fallbacks", index, entry) for index, entry in enumerate(agent.fallback_chain)]
    for key, index, entry in entries:
        where = f"agents.{name}.{key}[{index}]"
        settings = agent.model_settings if entry.model_settings is None else entry.model_settings
        kind: ProviderKind | Literal["builtin"] = "builtin"
        if entry.provider_name == "builtin":
            if entry.model_name not in BUILTIN_MODELS:
                problems.append(f"{where}: the built-in provider has only {', '.join(sorted(BUILTIN_MODELS))}")
                continue
        else:
            try:
                kind = resolve_provider(config, entry.provider_name, environ).kind
            except ValueError as exc:
                problems.append(f"{where}: {exc}")
                continue
        problems += [f"{where}.model_settings.{problem}" for problem in setting_problems(kind, settings)]
    return problems


def _model_settings_problems(agent_name: str, agent: AgentConfig, kind: ProviderKind | Literal["builtin"]) -> list[str]:
    return [f"agents.{agent_name}.model_settings.{problem}" for problem in setting_problems(kind, agent.model_settings)]


def _prompt_problems(where: str, prompt: str | SystemPromptConfig | None, base_dir: Path) -> list[str]:
    if not isinstance(prompt, SystemPromptConfig):
        return []
    problems = [
        f"{where}.template: placeholder {{{{{name}}}}} has no variable"
        for name in dict.fromkeys(PLACEHOLDER.findall(prompt.template))
        if name not in prompt.variables
    ]
    paths: list[tuple[str, str]] = [(f"{where}.runtime_code", prompt.runtime_code)] if prompt.runtime_code else []
    for name, variable in prompt.variables.items():
        if isinstance(variable, str):
            continue
        key = f"{where}.variables.{name}"
        paths += [(f"{key}.files.{i}", file) for i, file in enumerate(variable.files or [])]
        paths += [
            (f"{key}.{field}", value) for field in ("code", "runtime_code") if (value := getattr(variable, field))
        ]
        if variable.condition is not None and variable.condition.code:
            paths.append((f"{key}.condition.code", variable.condition.code))
    problems += [f"{key}: no such file {path!r}" for key, path in paths if not (base_dir / path).is_file()]
    return problems


def _tool_problems(agent_name: str, agent: AgentConfig, base_dir: Path) -> list[str]:
    problems = []
    for kind, names in (("tools", agent.tools), ("client_tools", agent.client_tools)):
        problems += [
            f"agents.{agent_name}.{kind}.{tool}: tool names are 1-64 letters, digits, '_' or '-'"
            for tool in names
            if not re.match(_TOOL_NAME, tool)
        ]
    problems += [
        f"agents.{agent_name}.client_tools.{tool}: also declared under tools; a name can be one or the other"
        for tool in agent.client_tools
        if tool in agent.tools
    ]
    for tool, settings in agent.tools.items():
        try:
            import_function(settings.function, base_dir)
        except ValueError as exc:
            problems.append(f"agents.{agent_name}.tools.{tool}.function: {exc}")
    return problems


def _mcp_problems(agent_name: str, agent: AgentConfig, config: Config) -> list[str]:
    problems = [
        f"agents.{agent_name}.mcp.{server}: no [mcp_servers.{server}] table"
        for server in agent.mcp
        if server not in config.mcp_servers
    ]
    # An MCP tool is offered as SERVER__tool: a server tool of that shape would shadow it.
    problems += [
        f"agents.{agent_name}.tools.{tool}: names starting with '{server}__' are the MCP server {server!r}'s"
        for tool in agent.tools
        for server in agent.mcp
        if tool.startswith(f"{server}__")
    ]
    return problems

"""The config file: agents, providers and server limits.

TOML (or the same structure as JSON). String values may reference ``${env:NAME}`` and
``${file:relative/path}`` (relative to the config file); ``$${`` writes a literal ``${``. Unknown keys,
bad values and missing env vars or files are errors that name the key path.
"""

from __future__ import annotations

import json
import os
import re
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal, TypeAlias

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from app.errors import ConfigError
from app.policy import SystemPromptPolicy

__all__ = [
    "DEFAULT_AGENT_NAME",
    "AgentConfig",
    "ClientToolConfig",
    "Config",
    "ServerSettings",
    "ServerToolConfig",
    "VercelAIVersion",
    "default_config",
    "load_config",
    "parse_config",
]

DEFAULT_AGENT_NAME = "assistant"
VercelAIVersion: TypeAlias = Literal["v5", "v6", "v7"]

_REFERENCE = re.compile(r"\$\$\{|\$\{(env|file):([^}]*)\}")
_NAME = r"^[A-Za-z0-9][A-Za-z0-9_.-]*$"
_TOOL_NAME = r"^[A-Za-z0-9_-]{1,64}$"


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class ServerSettings(_Strict):
    """``[server]``: limits that apply to every request."""

    max_body_bytes: int = Field(default=1024 * 1024, gt=0)
    keepalive_seconds: float = Field(default=15.0, gt=0)
    approval_secret: str | None = Field(default=None, min_length=16)


class ServerToolConfig(_Strict):
    """``[agents.NAME.tools.TOOL]``: a Python function chatgate runs for the model."""

    function: str = Field(pattern=r"^[A-Za-z_][\w.]*:[A-Za-z_][\w.]*$", description="package.module:function")
    description: str | None = None
    parameters: dict[str, Any] | None = None
    requires_approval: bool = False
    timeout: float = Field(default=30.0, gt=0)


class ClientToolConfig(_Strict):
    """``[agents.NAME.client_tools.TOOL]``: a tool the frontend runs (useChat requests carry no tools)."""

    description: str = ""
    parameters: dict[str, Any] = Field(default_factory=lambda: {"type": "object", "properties": {}})


class AgentConfig(_Strict):
    """``[agents.NAME]``: one agent a client can talk to."""

    model: str = Field(pattern=r"^[A-Za-z0-9_.-]+:.+$", description="provider:model")
    system_prompt: str | None = None
    manage_system_prompt: SystemPromptPolicy = "server"
    system_prompt_fallback: bool = False
    default: bool = False
    vercel_ai_version: VercelAIVersion = "v6"
    model_settings: dict[str, Any] = Field(default_factory=dict)
    description: str = ""
    tools: dict[str, ServerToolConfig] = Field(default_factory=dict)
    client_tools: dict[str, ClientToolConfig] = Field(default_factory=dict)
    max_steps: int = Field(default=10, ge=1)

    @property
    def provider_name(self) -> str:
        """The part of ``model`` before the first colon."""
        return self.model.split(":", 1)[0]

    @property
    def model_name(self) -> str:
        """The part of ``model`` after the first colon."""
        return self.model.split(":", 1)[1]


class Config(_Strict):
    """The whole config file."""

    server: ServerSettings = Field(default_factory=ServerSettings)
    agents: dict[str, AgentConfig] = Field(default_factory=dict)

    @field_validator("agents")
    @classmethod
    def _agent_names(cls, agents: dict[str, AgentConfig]) -> dict[str, AgentConfig]:
        bad = [name for name in agents if not re.match(_NAME, name)]
        if bad:
            raise ValueError(f"agent names must match {_NAME}: {', '.join(map(repr, bad))}")
        return agents

    @property
    def default_agent(self) -> str | None:
        """The agent ``/api/chat`` and ``/ag-ui`` serve: the one marked default, or the only one."""
        for name, agent in self.agents.items():
            if agent.default:
                return name
        return next(iter(self.agents)) if len(self.agents) == 1 else None


KNOWN_PROVIDERS = frozenset({"builtin"})
BUILTIN_MODELS = frozenset({"echo"})


def default_config() -> Config:
    """The config used when none is given: one agent on the built-in model."""
    return Config(
        agents={
            DEFAULT_AGENT_NAME: AgentConfig(
                model="builtin:echo",
                system_prompt="You are a helpful assistant.",
                default=True,
                description="Development agent on the built-in echo model.",
            )
        }
    )


def load_config(path: str | os.PathLike[str]) -> Config:
    """Read, interpolate and validate the config file at ``path``."""
    file = Path(path)
    try:
        text = file.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError([f"{file}: cannot read: {exc.strerror or exc}"]) from exc
    try:
        data: Any = json.loads(text) if file.suffix == ".json" else tomllib.loads(text)
    except (tomllib.TOMLDecodeError, json.JSONDecodeError) as exc:
        raise ConfigError([f"{file}: not valid {'JSON' if file.suffix == '.json' else 'TOML'}: {exc}"]) from exc
    if not isinstance(data, dict):
        raise ConfigError([f"{file}: the top level must be a table"])
    return parse_config(data, base_dir=file.parent)


def parse_config(data: Mapping[str, Any], *, base_dir: Path, environ: Mapping[str, str] | None = None) -> Config:
    """Interpolate ``${env:...}``/``${file:...}`` references in ``data`` and validate it."""
    problems: list[str] = []
    resolved = _interpolate(data, (), base_dir, os.environ if environ is None else environ, problems)
    try:
        config = Config.model_validate(resolved)
    except ValidationError as exc:
        raise ConfigError(problems + [_describe(error) for error in exc.errors()]) from None
    problems += _cross_checks(config)
    if problems:
        raise ConfigError(problems)
    return config


def _cross_checks(config: Config) -> list[str]:
    """Rules that span keys, each reported with the key path to fix."""
    problems = []
    defaults = [name for name, agent in config.agents.items() if agent.default]
    for name in defaults[1:]:
        problems.append(f"agents.{name}.default: only one agent may be the default (also {defaults[0]})")
    for name, agent in config.agents.items():
        problems += _tool_problems(name, agent)
        if agent.provider_name not in KNOWN_PROVIDERS:
            problems.append(f"agents.{name}.model: unknown provider {agent.provider_name!r}")
        if agent.provider_name == "builtin" and agent.model_name not in BUILTIN_MODELS:
            problems.append(f"agents.{name}.model: the built-in provider has only {', '.join(sorted(BUILTIN_MODELS))}")
    return problems


def _tool_problems(agent_name: str, agent: AgentConfig) -> list[str]:
    from app.tools import import_function  # imports operator code: only when a config declares tools

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
            import_function(settings.function)
        except ValueError as exc:
            problems.append(f"agents.{agent_name}.tools.{tool}.function: {exc}")
    return problems


def _interpolate(
    value: Any, path: tuple[str | int, ...], base_dir: Path, environ: Mapping[str, str], problems: list[str]
) -> Any:
    if isinstance(value, str):
        return _interpolate_string(value, path, base_dir, environ, problems)
    if isinstance(value, dict):
        return {key: _interpolate(item, (*path, key), base_dir, environ, problems) for key, item in value.items()}
    if isinstance(value, list):
        return [_interpolate(item, (*path, index), base_dir, environ, problems) for index, item in enumerate(value)]
    return value


def _interpolate_string(
    text: str, path: tuple[str | int, ...], base_dir: Path, environ: Mapping[str, str], problems: list[str]
) -> str:
    def replace(match: re.Match[str]) -> str:
        kind, name = match.group(1), match.group(2)
        if kind is None:
            return "${"
        if kind == "env":
            if name not in environ:
                problems.append(f"{_dotted(path)}: environment variable {name} is not set")
                return ""
            return environ[name]
        try:
            return (base_dir / name).read_text(encoding="utf-8")
        except OSError as exc:
            problems.append(f"{_dotted(path)}: cannot read file {name!r}: {exc.strerror or exc}")
            return ""

    return _REFERENCE.sub(replace, text)


def _dotted(path: tuple[str | int, ...]) -> str:
    return ".".join(str(part) for part in path) or "(top level)"


def _describe(error: Mapping[str, Any]) -> str:
    location = _dotted(tuple(part for part in error["loc"] if part != "__root__"))
    if error["type"] == "extra_forbidden":
        return f"{location}: unknown key"
    if error["type"] == "missing":
        return f"{location}: required key is missing"
    message = str(error["msg"]).removeprefix("Value error, ")
    return f"{location}: {message}"

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

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, ValidationError, field_validator, model_validator

from app.errors import ConfigError
from app.policy import SystemPromptPolicy

__all__ = [
    "BUILTIN_PROVIDER_NAMES",
    "DEFAULT_AGENT_NAME",
    "AgentConfig",
    "ClientToolConfig",
    "CodeConfig",
    "Config",
    "ProviderConfig",
    "ProviderKind",
    "ProviderTimeouts",
    "ServerSettings",
    "ServerToolConfig",
    "SystemPromptConfig",
    "VariableConfig",
    "VercelAIVersion",
    "default_config",
    "load_config",
    "parse_config",
    "resolve_provider",
]

DEFAULT_AGENT_NAME = "assistant"
VercelAIVersion: TypeAlias = Literal["v5", "v6", "v7"]
ProviderKind: TypeAlias = Literal["openai", "anthropic", "ollama"]

_REFERENCE = re.compile(r"\$\$\{|\$\{(env|file):([^}]*)\}")
_NAME = r"^[A-Za-z0-9][A-Za-z0-9_.-]*$"
_TOOL_NAME = r"^[A-Za-z0-9_-]{1,64}$"


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class ServerSettings(_Strict):
    """``[server]``: limits that apply to every request."""

    max_body_bytes: int = Field(default=1024 * 1024, gt=0)
    keepalive_seconds: float = Field(default=15.0, gt=0)
    shutdown_grace_seconds: int = Field(default=10, ge=0)
    approval_secret: str | None = Field(default=None, min_length=16)
    file_url_schemes: tuple[Literal["data", "https", "http"], ...] = ("data", "https")
    max_file_bytes: int = Field(default=10 * 1024 * 1024, gt=0)


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


class CodeConfig(_Strict):
    """Python for a condition: a file (``code``) or inline text (``inline_code``), exactly one."""

    code: str | None = None
    inline_code: str | None = None

    @model_validator(mode="after")
    def _exactly_one(self) -> CodeConfig:
        if (self.code is None) == (self.inline_code is None):
            raise ValueError("give exactly one of code or inline_code")
        return self


class VariableConfig(_Strict):
    """One template variable in object form: exactly one of text, files, code or inline_code."""

    text: str | None = None
    files: list[str] | None = None
    code: str | None = None
    inline_code: str | None = None
    condition: CodeConfig | None = None
    runtime_code: str | None = None
    client_overridable: bool = False

    @model_validator(mode="after")
    def _exactly_one_source(self) -> VariableConfig:
        sources = [self.text, self.files, self.code, self.inline_code]
        if sum(source is not None for source in sources) != 1:
            raise ValueError("give exactly one of text, files, code or inline_code")
        return self


class SystemPromptConfig(_Strict):
    """A templated system prompt: ``{{NAME}}`` placeholders filled per request (see app/prompts.py)."""

    template: str
    variables: dict[str, str | VariableConfig] = Field(default_factory=dict)
    runtime_code: str | None = None
    timeout: float = Field(default=10.0, gt=0)


class ProviderTimeouts(_Strict):
    """``[providers.NAME.timeouts]``, in seconds (see app/providers/http.py for exactly what each bounds)."""

    connect: float = Field(default=10.0, gt=0)
    first_token: float = Field(default=300.0, gt=0)
    idle: float = Field(default=120.0, gt=0)


class ProviderConfig(_Strict):
    """``[providers.NAME]``: one upstream model API. ``base_url`` defaults to the kind's public API."""

    kind: ProviderKind
    base_url: str | None = Field(default=None, pattern=r"^https?://")
    api_key: str | None = None
    headers: dict[str, str] = Field(default_factory=dict)
    timeouts: ProviderTimeouts = Field(default_factory=ProviderTimeouts)
    retries: int = Field(default=2, ge=0, le=10)


class AgentConfig(_Strict):
    """``[agents.NAME]``: one agent a client can talk to."""

    model: str = Field(pattern=r"^[A-Za-z0-9_.-]+:.+$", description="provider:model")
    system_prompt: str | SystemPromptConfig | None = None
    instructions: str | None = None
    allow_request_instructions: bool = False
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
    """The whole config file. ``base_dir`` is where its relative paths start."""

    _base_dir: Path = PrivateAttr(default_factory=Path.cwd)

    server: ServerSettings = Field(default_factory=ServerSettings)
    providers: dict[str, ProviderConfig] = Field(default_factory=dict)
    agents: dict[str, AgentConfig] = Field(default_factory=dict)

    @field_validator("agents")
    @classmethod
    def _agent_names(cls, agents: dict[str, AgentConfig]) -> dict[str, AgentConfig]:
        bad = [name for name in agents if not re.match(_NAME, name)]
        if bad:
            raise ValueError(f"agent names must match {_NAME}: {', '.join(map(repr, bad))}")
        return agents

    @field_validator("providers")
    @classmethod
    def _provider_names(cls, providers: dict[str, ProviderConfig]) -> dict[str, ProviderConfig]:
        bad = [name for name in providers if not re.match(_NAME, name) or ":" in name or name == "builtin"]
        if bad:
            raise ValueError(f"provider names must match {_NAME} and not be 'builtin': {', '.join(map(repr, bad))}")
        return providers

    @property
    def base_dir(self) -> Path:
        """The directory relative paths in this config start from (the config file's)."""
        return self._base_dir

    @property
    def default_agent(self) -> str | None:
        """The agent ``/api/chat`` and ``/ag-ui`` serve: the one marked default, or the only one."""
        for name, agent in self.agents.items():
            if agent.default:
                return name
        return next(iter(self.agents)) if len(self.agents) == 1 else None


BUILTIN_MODELS = frozenset({"echo"})
BUILTIN_PROVIDER_NAMES: tuple[ProviderKind, ...] = ("openai", "anthropic", "ollama")
OPENAI_DEFAULT_BASE_URL = "https://api.openai.com/v1"
OLLAMA_DEFAULT_HOST = "http://127.0.0.1:11434"


def resolve_provider(config: Config, name: str, environ: Mapping[str, str] | None = None) -> ProviderConfig:
    """The settings of the upstream provider called ``name``: its table, or a built-in name read from env.

    ``openai`` uses OPENAI_API_KEY and OPENAI_BASE_URL (a key is required only for the public API),
    ``anthropic`` ANTHROPIC_API_KEY and ANTHROPIC_BASE_URL, ``ollama`` OLLAMA_HOST (default
    http://127.0.0.1:11434). A table of the same name takes precedence. Raises ``ValueError`` saying
    what is missing.
    """
    if name in config.providers:
        return config.providers[name]
    env = os.environ if environ is None else environ
    if name == "openai":
        base_url = env.get("OPENAI_BASE_URL") or None
        api_key = env.get("OPENAI_API_KEY") or None
        if api_key is None and base_url is None:
            raise ValueError("provider 'openai' needs OPENAI_API_KEY set, or a [providers.openai] table")
        return ProviderConfig(kind="openai", base_url=base_url, api_key=api_key)
    if name == "anthropic":
        api_key = env.get("ANTHROPIC_API_KEY") or None
        if api_key is None:
            raise ValueError("provider 'anthropic' needs ANTHROPIC_API_KEY set, or a [providers.anthropic] table")
        return ProviderConfig(kind="anthropic", base_url=env.get("ANTHROPIC_BASE_URL") or None, api_key=api_key)
    if name == "ollama":
        host = env.get("OLLAMA_HOST") or OLLAMA_DEFAULT_HOST
        if "://" not in host:  # Ollama's own CLI accepts a bare host:port
            host = "http://" + host
        return ProviderConfig(kind="ollama", base_url=host)
    known = ["builtin", *BUILTIN_PROVIDER_NAMES, *(n for n in config.providers if n not in BUILTIN_PROVIDER_NAMES)]
    raise ValueError(f"unknown provider {name!r} (known: {', '.join(known)}; add a [providers.{name}] table)")


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
        raise ConfigError(problems + _describe_all(exc.errors(), resolved)) from None
    config._base_dir = base_dir
    problems += _cross_checks(config, os.environ if environ is None else environ)
    if problems:
        raise ConfigError(problems)
    return config


def _cross_checks(config: Config, environ: Mapping[str, str]) -> list[str]:
    """Rules that span keys, each reported with the key path to fix."""
    problems = []
    defaults = [name for name, agent in config.agents.items() if agent.default]
    for name in defaults[1:]:
        problems.append(f"agents.{name}.default: only one agent may be the default (also {defaults[0]})")
    for name, agent in config.agents.items():
        problems += _tool_problems(name, agent)
        problems += _prompt_problems(name, agent, config.base_dir)
        if agent.provider_name == "builtin":
            if agent.model_name not in BUILTIN_MODELS:
                problems.append(
                    f"agents.{name}.model: the built-in provider has only {', '.join(sorted(BUILTIN_MODELS))}"
                )
            continue
        try:
            provider = resolve_provider(config, agent.provider_name, environ)
        except ValueError as exc:
            problems.append(f"agents.{name}.model: {exc}")
            continue
        problems += _model_settings_problems(name, agent, provider.kind)
    return problems


def _model_settings_problems(agent_name: str, agent: AgentConfig, kind: ProviderKind) -> list[str]:
    from app.providers.settings import setting_problems  # the providers own their settings

    return [f"agents.{agent_name}.model_settings.{problem}" for problem in setting_problems(kind, agent.model_settings)]


def _prompt_problems(agent_name: str, agent: AgentConfig, base_dir: Path) -> list[str]:
    from app.prompts import PLACEHOLDER

    prompt = agent.system_prompt
    if not isinstance(prompt, SystemPromptConfig):
        return []
    where = f"agents.{agent_name}.system_prompt"
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


def _describe_all(errors: list[Any], data: Any) -> list[str]:
    """One line per problem, with union branch names removed from the key path.

    A value that may be a string or a table fails both ways; the string branch's "should be a valid
    string" is dropped whenever the same key (or a key inside it) has a more specific complaint.
    """
    located = [(_input_path(error["loc"], data), error) for error in errors]
    specific = [path for path, error in located if error["type"] != "string_type"]
    strings = {path for path, error in located if error["type"] == "string_type"}
    lines = []
    for path, error in located:
        if error["type"] == "string_type" and any(other[: len(path)] == path for other in specific):
            continue
        if error["type"] in ("model_type", "dict_type") and path in strings:
            line = f"{_dotted(path)}: must be a string or a table"
        else:
            line = _describe(path, error)
        if line not in lines:
            lines.append(line)
    return lines


def _input_path(loc: tuple[str | int, ...], data: Any) -> tuple[str | int, ...]:
    """The parts of a pydantic error location that are real keys or indexes of the input."""
    path: list[str | int] = []
    node = data
    for part in loc:
        if isinstance(node, dict) and part in node:
            node = node[part]
        elif isinstance(node, list) and isinstance(part, int) and part < len(node):
            node = node[part]
        elif not (isinstance(node, dict) and isinstance(part, str) and not _looks_like_union_tag(part)):
            continue
        path.append(part)
    return tuple(path)


def _looks_like_union_tag(part: str) -> bool:
    return part in {"str", "int", "float", "bool"} or part[:1].isupper() or "[" in part


def _describe(path: tuple[str | int, ...], error: Mapping[str, Any]) -> str:
    location = _dotted(path)
    if error["type"] == "extra_forbidden":
        return f"{location}: unknown key"
    if error["type"] == "missing":
        return f"{location}: required key is missing"
    message = str(error["msg"]).removeprefix("Value error, ")
    return f"{location}: {message}"

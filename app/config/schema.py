"""The config file's structure: agents, providers, server limits, and the defaults of each.

Validation of one value lives here, on its model; rules that span keys live in ``checks.py``, and
reading a file in ``loading.py``.
"""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal, TypeAlias

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, field_validator, model_validator

from chatgate.config.budget import Budget, BudgetSettings, PriceConfig
from chatgate.media_types import media_type_essence

__all__ = [
    "BUILTIN_MODELS",
    "BUILTIN_PROVIDER_NAMES",
    "DEFAULT_AGENT_NAME",
    "OLLAMA_DEFAULT_HOST",
    "OPENAI_DEFAULT_BASE_URL",
    "PLACEHOLDER",
    "AdminClaimConfig",
    "AgentConfig",
    "AgentMCPConfig",
    "AuthConfig",
    "ClientToolConfig",
    "CodeConfig",
    "Config",
    "ContextConfig",
    "CopilotKitSettings",
    "FeedbackScale",
    "FilesSettings",
    "JwtConfig",
    "KeyConfig",
    "LeakGuardConfig",
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
    "TelemetrySettings",
    "VariableConfig",
    "VercelAIVersion",
    "default_config",
    "resolve_provider",
]

DEFAULT_AGENT_NAME = "assistant"
VercelAIVersion: TypeAlias = Literal["v5", "v6", "v7"]
FeedbackScale: TypeAlias = Literal["thumbs", "stars"]
"""An agent's ``feedback_scale`` (docs/prompts.md#feedback): thumbs are -1 or +1, stars 1 to 5."""
ProviderKind: TypeAlias = Literal["openai", "anthropic", "ollama"]
SystemPromptPolicy: TypeAlias = Literal["server", "client"]
"""``manage_system_prompt``: who decides what the model is told to be (app/run/policy.py applies it)."""
PLACEHOLDER = re.compile(r"\{\{\s*([A-Za-z_][A-Za-z0-9_]*)\s*\}\}")
"""A template's ``{{name}}`` placeholder: checked here against its variables, filled in by app/run/prompts.py."""
LeakGuardMode: TypeAlias = Literal["redact", "stop", "off"]

_NAME = r"^[A-Za-z0-9][A-Za-z0-9_.-]*$"
_MODEL = r"^[A-Za-z0-9_.-]+:.+$"
_ORIGIN = r"https?://[^/?#\s]+"
_HEADER_NAME = r"[A-Za-z0-9!#$%&'*+.^_`|~-]+"


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class ServerSettings(_Strict):
    """``[server]``: limits that apply to every request."""

    max_body_bytes: int = Field(default=1024 * 1024, gt=0)
    max_head_bytes: int = Field(default=64 * 1024, ge=1024)
    head_timeout_seconds: float = Field(default=10.0, gt=0)
    body_timeout_seconds: float = Field(default=60.0, gt=0)
    idle_timeout_seconds: float = Field(default=5.0, gt=0)
    keepalive_seconds: float = Field(default=15.0, gt=0)
    shutdown_grace_seconds: int = Field(default=25, ge=0)
    approval_secret: str | None = Field(default=None, min_length=16)
    file_url_schemes: tuple[Literal["data", "https", "http"], ...] = ("data", "https")
    max_file_bytes: int = Field(default=10 * 1024 * 1024, gt=0)
    redis_url: str | None = Field(default=None, pattern=r"^rediss?://")
    redis_failure: Literal["closed", "open"] = "closed"
    log_format: Literal["text", "json"] = "text"
    chat_page: bool = True
    allow_unauthenticated: bool = False
    cors_origins: tuple[str, ...] = ()
    cors_headers: tuple[str, ...] = ()
    max_messages: int = Field(default=1000, gt=0)
    max_parts_per_message: int = Field(default=100, gt=0)
    max_text_chars: int = Field(default=1_000_000, gt=0)
    max_tools: int = Field(default=128, ge=0)
    run_log_ttl_seconds: float = Field(default=60.0, gt=0)
    run_log_max_bytes: int = Field(default=4 * 1024 * 1024, gt=0)
    run_log_max_entries: int = Field(default=10_000, gt=0)
    run_log_lease_seconds: float = Field(default=3.0, gt=0)
    run_log_flush_seconds: float = Field(default=0.05, gt=0)
    failover_failures: int = Field(default=3, ge=1)
    failover_window_seconds: float = Field(default=30.0, gt=0)
    failover_cooldown_seconds: float = Field(default=30.0, gt=0)

    @model_validator(mode="after")
    def _flush_within_the_lease(self) -> ServerSettings:
        if self.run_log_flush_seconds * 3 > self.run_log_lease_seconds:
            raise ValueError("run_log_flush_seconds must be at most a third of run_log_lease_seconds")
        return self

    @field_validator("cors_origins")
    @classmethod
    def _exact_origins(cls, origins: tuple[str, ...]) -> tuple[str, ...]:
        bad = [origin for origin in origins if origin != "*" and not re.fullmatch(_ORIGIN, origin)]
        if bad:
            raise ValueError(f'origins are scheme://host[:port] with no path, or "*": {", ".join(map(repr, bad))}')
        return origins

    @field_validator("cors_headers")
    @classmethod
    def _header_names(cls, names: tuple[str, ...]) -> tuple[str, ...]:
        bad = [name for name in names if name == "*" or not re.fullmatch(_HEADER_NAME, name)]
        if bad:
            raise ValueError(f"header names are HTTP tokens such as x-tenant-id, not {', '.join(map(repr, bad))}")
        return tuple(name.lower() for name in names)


class KeyConfig(_Strict):
    """``[[keys]]``: one API key clients send as ``Authorization: Bearer <key>`` or ``x-api-key``.

    Exactly one of ``key`` (the secret, usually ``${env:...}``) or ``sha256`` (its hex digest, so the
    file holds no secret). ``agents`` None means every agent.
    """

    id: str = Field(pattern=_NAME)
    key: str | None = Field(default=None, min_length=16, repr=False)
    sha256: str | None = Field(default=None, pattern=r"^[0-9a-fA-F]{64}$", repr=False)
    agents: tuple[str, ...] | None = None
    rpm: int | None = Field(default=None, gt=0)
    max_concurrent_streams: int | None = Field(default=None, gt=0)
    admin: bool = False
    trusted_user_header: bool = False
    budget: Budget | None = None

    @model_validator(mode="after")
    def _exactly_one_secret(self) -> KeyConfig:
        if (self.key is None) == (self.sha256 is None):
            raise ValueError("give exactly one of key or sha256")
        return self

    @property
    def digest(self) -> bytes:
        """The SHA-256 digest of the secret, whichever way the file gave it."""
        if self.sha256 is not None:
            return bytes.fromhex(self.sha256)
        assert self.key is not None
        return hashlib.sha256(self.key.encode()).digest()


_TOKEN_ALGORITHMS = ("RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512", "EdDSA")


class AdminClaimConfig(_Strict):
    """``[auth.jwt] admin_claim``: a token whose ``claim`` is ``value`` (or lists it) is an admin's."""

    claim: str = Field(min_length=1)
    value: str = Field(min_length=1)


class JwtConfig(_Strict):
    """``[auth.jwt]``: people signed in with an OpenID provider, calling with its access tokens (docs/identity.md).

    ``issuer`` is what every token's ``iss`` must be; its keys come from ``jwks_url`` or, without it, from
    the issuer's discovery document. A sibling ``budget`` table belongs to usage budgets.
    """

    issuer: str = Field(pattern=r"^https?://\S+$")
    jwks_url: str | None = Field(default=None, pattern=r"^https?://\S+$")
    audience: str = Field(min_length=1)
    algorithms: tuple[str, ...] = Field(default=("RS256", "ES256", "EdDSA"), min_length=1)
    user_claim: str = Field(default="sub", min_length=1)
    agents: tuple[str, ...] | None = None
    agents_claim: str | None = Field(default=None, min_length=1)
    admin_claim: AdminClaimConfig | None = None
    rpm: int | None = Field(default=None, gt=0)
    max_concurrent_streams: int | None = Field(default=None, gt=0)
    leeway_seconds: float = Field(default=30.0, ge=0, le=600)
    jwks_refresh_seconds: float = Field(default=60.0, ge=0)
    page_client_id: str | None = Field(default=None, min_length=1)
    page_params: dict[str, str] = Field(default_factory=lambda: {"scope": "openid"})
    budget: Budget | None = None

    @field_validator("algorithms")
    @classmethod
    def _signed_with_a_public_key(cls, algorithms: tuple[str, ...]) -> tuple[str, ...]:
        for alg in algorithms:
            if alg.lower() == "none" or alg.upper().startswith("HS"):
                raise ValueError(
                    f"{alg!r} is refused: tokens must be signed with the issuer's private key "
                    f"(one of {', '.join(_TOKEN_ALGORITHMS)})"
                )
            if alg not in _TOKEN_ALGORITHMS:
                raise ValueError(f"unknown algorithm {alg!r}; use one of {', '.join(_TOKEN_ALGORITHMS)}")
        return algorithms


class AuthConfig(_Strict):
    """``[auth]``: ways to sign in besides ``[[keys]]``."""

    jwt: JwtConfig | None = None


class StoreSettings(_Strict):
    """``[store]``: where server-held conversations live (see docs/conversations.md)."""

    url: str | None = Field(default=None, pattern=r"^(sqlite:///|postgres(ql)?://)")
    finish_on_disconnect: bool = True
    lock_timeout_seconds: float = Field(default=10.0, gt=0, le=600)
    """How long a statement waits for another connection's lock (or, on PostgreSQL, a request for a free
    pooled connection) before the request gets 503 ``store_busy``."""


_MEDIA_TYPE = r"^[a-z0-9][a-z0-9!#$&^_.+-]*/([a-z0-9][a-z0-9!#$&^_.+-]*|\*)$"

DEFAULT_UPLOAD_TYPES = (
    "image/png",
    "image/jpeg",
    "image/gif",
    "image/webp",
    "application/pdf",
    "text/plain",
    "text/markdown",
    "text/csv",
)


class FilesSettings(_Strict):
    """``[files]``: uploads (``POST /agents/{agent}/files``, app/files/), kept in the store.

    ``max_bytes`` bounds one file; ``allowed_types`` are media types (``type/subtype`` or ``type/*``).
    ``max_inline_bytes_per_call`` bounds the upload bytes one model call carries, counted per reference
    (unset: twice ``max_bytes``, see ``inline_limit``). ``max_uploads_in_flight`` and
    ``max_uploads_in_flight_per_key`` bound the uploads one process receives at once, in all and per owner.
    """

    max_bytes: int = Field(default=10 * 1024 * 1024, gt=0)
    allowed_types: tuple[str, ...] = DEFAULT_UPLOAD_TYPES
    max_inline_bytes_per_call: int | None = Field(default=None, gt=0)
    max_uploads_in_flight: int = Field(default=16, gt=0)
    max_uploads_in_flight_per_key: int = Field(default=4, gt=0)

    @model_validator(mode="after")
    def _one_file_fits_a_call(self) -> FilesSettings:
        if self.max_inline_bytes_per_call is not None and self.max_inline_bytes_per_call < self.max_bytes:
            raise ValueError("max_inline_bytes_per_call must be at least max_bytes: one upload must fit a model call")
        return self

    @property
    def inline_limit(self) -> int:
        """The upload bytes one model call may carry: ``max_inline_bytes_per_call``, else twice ``max_bytes``."""
        return self.max_inline_bytes_per_call or 2 * self.max_bytes

    @field_validator("allowed_types")
    @classmethod
    def _media_types(cls, types: tuple[str, ...]) -> tuple[str, ...]:
        bad = [value for value in types if not re.fullmatch(_MEDIA_TYPE, value)]
        if bad:
            raise ValueError(f'media types are "type/subtype" or "type/*" in lower case: {", ".join(map(repr, bad))}')
        return types

    def allows(self, media_type: str) -> bool:
        """Whether an upload of ``media_type`` (``type/subtype``, lower case) is accepted.

        The type is parsed first (RFC 9110): ``image/png,text/html`` is no ``image/*``.
        """
        if media_type_essence(media_type) != media_type:
            return False
        major = media_type.split("/", 1)[0]
        return media_type in self.allowed_types or f"{major}/*" in self.allowed_types


class TelemetrySettings(_Strict):
    """``[telemetry]``: OpenTelemetry traces over OTLP/HTTP (see docs/observability.md); off without an endpoint.

    ``otlp_endpoint`` is the collector's base URL (``/v1/traces`` is appended); without it the standard
    ``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT``/``OTEL_EXPORTER_OTLP_ENDPOINT`` (and ``_HEADERS``) apply.
    """

    otlp_endpoint: str | None = Field(default=None, pattern=r"^https?://[^\s]+$")
    service_name: str = Field(default="chatgate", min_length=1)
    sample_ratio: float = Field(default=1.0, ge=0.0, le=1.0)
    capture_content: bool = False
    headers: dict[str, str] = Field(default_factory=dict)
    export_timeout_seconds: float = Field(default=5.0, gt=0)


class CopilotKitSettings(_Strict):
    """``[copilotkit]``: CopilotKit's runtime protocol served by chatgate itself (docs/copilotkit.md).

    ``path`` is the base a ``CopilotKitProvider``'s ``runtimeUrl`` points at (``/copilotkit``); without
    it (the default) nothing is served there. Bound when the app is created: a reload that changes it
    takes effect on restart.
    """

    path: str | None = Field(default=None, pattern=r"^(/[A-Za-z0-9._~-]+)+$")

    @field_validator("path")
    @classmethod
    def _not_taken(cls, path: str | None) -> str | None:
        if path is not None and path.split("/")[1] in _TAKEN_PATHS:
            raise ValueError(f"{path!r} is under a path chatgate serves itself ({', '.join(sorted(_TAKEN_PATHS))})")
        return path


_TAKEN_PATHS = frozenset({"agents", "api", "ag-ui", "healthz", "readyz", "metrics", "openapi.json", "static", "usage"})
"""The first path segments chatgate's own routes use: a ``[copilotkit] path`` under one would shadow them."""


class ServerToolConfig(_Strict):
    """``[agents.NAME.tools.TOOL]``: a Python function chatgate runs for the model."""

    function: str = Field(pattern=r"^[A-Za-z_][\w.]*:[A-Za-z_][\w.]*$", description="package.module:function")
    description: str | None = None
    parameters: dict[str, Any] | None = None
    requires_approval: bool = False
    timeout: float = Field(default=30.0, gt=0)


MCP_SERVER_NAME = r"^[A-Za-z0-9]+(?:[-_][A-Za-z0-9]+)*$"
"""A ``[mcp_servers.NAME]`` name: no ``__`` and no trailing ``_``, so ``NAME__tool`` splits one way."""


class MCPServerConfig(_Strict):
    """``[mcp_servers.NAME]``: a Model Context Protocol server whose tools agents may use (docs/tools.md).

    Exactly one of ``command`` (a stdio server: a child process of each chatgate process, with ``env``
    added to its environment) or ``url`` (a streamable HTTP server, sent ``headers``). Every call is cut
    off after ``timeout_seconds``; a result longer than ``max_output_chars`` is truncated with a marker.
    Images a result holds reach the model while they total at most ``max_image_bytes`` (decoded); the
    rest, or all with ``0``, reach it as lines naming them. A run waits up to ``connect_wait_seconds`` for
    a server that is not connected; then it ends with ``mcp_unavailable``, or goes on without the server
    when it is ``optional``.
    """

    command: tuple[str, ...] | None = Field(default=None, min_length=1)
    env: dict[str, str] = Field(default_factory=dict)
    cwd: str | None = None
    url: str | None = Field(default=None, pattern=r"^https?://")
    headers: dict[str, str] = Field(default_factory=dict)
    timeout_seconds: float = Field(default=30.0, gt=0)
    max_output_chars: int = Field(default=100_000, ge=100)
    max_image_bytes: int = Field(default=5 * 1024 * 1024, ge=0)
    connect_wait_seconds: float = Field(default=10.0, ge=0)
    optional: bool = False

    @model_validator(mode="after")
    def _one_transport(self) -> MCPServerConfig:
        if (self.command is None) == (self.url is None):
            raise ValueError("give exactly one of command (a stdio server) or url (a streamable HTTP server)")
        if self.command is not None and self.headers:
            raise ValueError("headers are for a url server; a command server takes env")
        if self.url is not None and (self.env or self.cwd):
            raise ValueError("env and cwd are for a command server; a url server takes headers")
        return self


class AgentMCPConfig(_Strict):
    """``[agents.NAME.mcp.SERVER]``: which of an MCP server's tools the agent gets, as globs on its names.

    ``include`` None means every tool the server lists; ``exclude`` wins over ``include``; a tool
    matching ``requires_approval`` waits for a human like a ``requires_approval`` server tool.
    """

    include: tuple[str, ...] | None = None
    exclude: tuple[str, ...] = ()
    requires_approval: tuple[str, ...] = ()


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
    """A templated system prompt: ``{{NAME}}`` placeholders filled per request (see app/run/prompts.py)."""

    template: str
    variables: dict[str, str | VariableConfig] = Field(default_factory=dict)
    runtime_code: str | None = None
    timeout: float = Field(default=10.0, gt=0)


class LeakGuardConfig(_Strict):
    """``[agents.NAME.leak_guard]``: what happens when an answer repeats the system prompt (app/leak_guard/).

    ``mode`` defaults by policy: ``"redact"`` under ``manage_system_prompt = "server"``, ``"off"`` under
    ``"client"`` (the frontend wrote that prompt); read it through ``AgentConfig.leak_guard_mode``.
    """

    mode: LeakGuardMode | None = None
    min_words: int = Field(default=8, ge=3, le=64)
    canary: bool = False
    markup: bool = True
    """Read answers and reasoning as markdown and HTML, as the chat page and most frontends render them:
    emphasis marks and inline tags are invisible inside a word, character references are what they show."""


class ProviderTimeouts(_Strict):
    """``[providers.NAME.timeouts]``, in seconds (see app/providers/http.py for exactly what each bounds)."""

    connect: float = Field(default=10.0, gt=0)
    first_token: float = Field(default=300.0, gt=0)
    idle: float = Field(default=30.0, gt=0)


class ProviderConfig(_Strict):
    """``[providers.NAME]``: one upstream model API. ``base_url`` defaults to the kind's public API."""

    kind: ProviderKind
    base_url: str | None = Field(default=None, pattern=r"^https?://")
    api_key: str | None = None
    headers: dict[str, str] = Field(default_factory=dict)
    timeouts: ProviderTimeouts = Field(default_factory=ProviderTimeouts)
    retries: int = Field(default=2, ge=0, le=10)


class ContextConfig(_Strict):
    """``[agents.NAME.context]``: how much of a thread the model sees (docs/configuration.md)."""

    window: int | Literal["auto"] | None = Field(default=None, description="tokens the model accepts, or auto")
    strategy: Literal["drop_oldest", "summarize", "fail"] = "drop_oldest"
    summary_model: str | None = Field(default=None, pattern=_MODEL)

    @field_validator("window")
    @classmethod
    def _positive(cls, window: int | str | None) -> int | str | None:
        if isinstance(window, int) and window <= 0:
            raise ValueError('window is a number of tokens above 0, or "auto"')
        return window


class ModelNamed:
    """What a ``model`` written ``provider:model`` names: ``provider_name`` and ``model_name``."""

    model: str

    @property
    def provider_name(self) -> str:
        """The part of ``model`` before the first colon."""
        return self.model.split(":", 1)[0]

    @property
    def model_name(self) -> str:
        """The part of ``model`` after the first colon."""
        return self.model.split(":", 1)[1]


class FallbackConfig(ModelNamed, _Strict):
    """One entry of an agent's ``fallbacks`` written as a table: its model and what differs for it.

    ``model_settings`` replaces the agent's for this entry when given; ``window`` is the model's context
    window in tokens, which lets a context-length refusal fail over to it (docs/providers.md, "Failover").
    """

    model: str = Field(description="provider:model")
    model_settings: dict[str, Any] | None = None
    window: int | None = Field(default=None, gt=0)

    @field_validator("model")
    @classmethod
    def _provider_and_model(cls, model: str) -> str:
        return _checked_model(model)


class DeploymentConfig(FallbackConfig):
    """One entry of an agent's ``deployments``: another deployment of its model (a key, a region, a server).

    ``weight`` is its share of the runs, against the agent's own ``weight`` and the other deployments'.
    """

    weight: float = Field(default=1.0, gt=0)


def _checked_model(model: str) -> str:
    if not re.match(_MODEL, model):
        raise ValueError(f"write the model as provider:model, e.g. openai:gpt-4.1 or builtin:echo (got {model!r})")
    return model


class VariantConfig(_Strict):
    """``[agents.NAME.variants.LABEL]``: one arm of a prompt experiment (docs/prompts.md).

    ``weight`` is its share of the threads (or people) against the other variants'; ``system_prompt`` its
    own prompt; ``model`` and ``model_settings``, when set, replace the agent's for its runs.
    """

    weight: float = Field(default=1.0, gt=0)
    system_prompt: str | SystemPromptConfig
    version: str | None = Field(default=None, min_length=1, max_length=100)
    model: str | None = Field(default=None, pattern=_MODEL)
    model_settings: dict[str, Any] | None = None


class AgentConfig(ModelNamed, _Strict):
    """``[agents.NAME]``: one agent a client can talk to.

    ``version`` labels its system prompt (docs/prompts.md); ``variants`` split its runs between prompts.
    """

    model: str = Field(description="provider:model")
    weight: float = Field(default=1.0, gt=0)
    deployments: tuple[str | DeploymentConfig, ...] = ()
    fallbacks: tuple[str | FallbackConfig, ...] = ()
    system_prompt: str | SystemPromptConfig | None = None
    version: str | None = Field(default=None, min_length=1, max_length=100)
    variants: dict[str, VariantConfig] = Field(default_factory=dict)
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
    mcp: dict[str, AgentMCPConfig] = Field(default_factory=dict)
    max_steps: int = Field(default=10, ge=1)
    conversations: Literal["client", "server"] = "client"
    titles: bool = True
    feedback_scale: FeedbackScale = "thumbs"
    title_model: str | None = Field(default=None, pattern=_MODEL)
    prompts: dict[str, str | SystemPromptConfig] = Field(default_factory=dict)
    context: ContextConfig = Field(default_factory=ContextConfig)
    leak_guard: LeakGuardConfig = Field(default_factory=LeakGuardConfig)
    budget: Budget | None = None

    @field_validator("model")
    @classmethod
    def _provider_and_model(cls, model: str) -> str:
        return _checked_model(model)

    @field_validator("fallbacks", "deployments")
    @classmethod
    def _fallback_models(cls, entries: tuple[str | FallbackConfig, ...]) -> tuple[str | FallbackConfig, ...]:
        for entry in entries:
            if isinstance(entry, str):
                _checked_model(entry)
        return entries

    @property
    def deployment_pool(self) -> tuple[DeploymentConfig, ...]:
        """The ``deployments``, each as a table (a plain ``"provider:model"`` has weight 1 and the agent's settings)."""
        return tuple(DeploymentConfig(model=entry) if isinstance(entry, str) else entry for entry in self.deployments)

    @property
    def fallback_chain(self) -> tuple[FallbackConfig, ...]:
        """The ``fallbacks`` in order, each as a table (a plain ``"provider:model"`` keeps the agent's settings)."""
        return tuple(FallbackConfig(model=entry) if isinstance(entry, str) else entry for entry in self.fallbacks)

    @property
    def leak_guard_mode(self) -> LeakGuardMode:
        """The leak guard's mode: as set, else ``"redact"`` under the server policy and ``"off"`` under the client's."""
        if self.leak_guard.mode is not None:
            return self.leak_guard.mode
        return "redact" if self.manage_system_prompt == "server" else "off"


class Config(_Strict):
    """The whole config file. ``base_dir`` is where its relative paths start."""

    _base_dir: Path = PrivateAttr(default_factory=Path.cwd)
    _files_read: tuple[Path, ...] = PrivateAttr(default=())

    server: ServerSettings = Field(default_factory=ServerSettings)
    providers: dict[str, ProviderConfig] = Field(default_factory=dict)
    agents: dict[str, AgentConfig] = Field(default_factory=dict)
    store: StoreSettings = Field(default_factory=StoreSettings)
    files: FilesSettings = Field(default_factory=FilesSettings)
    telemetry: TelemetrySettings = Field(default_factory=TelemetrySettings)
    copilotkit: CopilotKitSettings = Field(default_factory=CopilotKitSettings)
    keys: tuple[KeyConfig, ...] = ()
    auth: AuthConfig = Field(default_factory=AuthConfig)
    mcp_servers: dict[str, MCPServerConfig] = Field(default_factory=dict)

    @field_validator("mcp_servers")
    @classmethod
    def _mcp_server_names(cls, servers: dict[str, MCPServerConfig]) -> dict[str, MCPServerConfig]:
        bad = [name for name in servers if not re.match(MCP_SERVER_NAME, name) or len(name) > 30]
        if bad:
            raise ValueError(
                "MCP server names are up to 30 letters and digits, joined by single '-' or '_': "
                + ", ".join(map(repr, bad))
            )
        return servers

    pricing: dict[str, PriceConfig] = Field(default_factory=dict)
    budgets: BudgetSettings = Field(default_factory=BudgetSettings)

    @field_validator("keys")
    @classmethod
    def _unique_key_ids(cls, keys: tuple[KeyConfig, ...]) -> tuple[KeyConfig, ...]:
        ids = [key.id for key in keys]
        doubled = sorted({name for name in ids if ids.count(name) > 1})
        if doubled:
            raise ValueError(f"key ids must be unique: {', '.join(map(repr, doubled))}")
        return keys

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
    def files_read(self) -> tuple[Path, ...]:
        """The files loading read: the config file and every ``${file:}`` it references."""
        return self._files_read

    @property
    def store_url(self) -> str | None:
        """The store's URL, or None when nothing needs a store.

        ``[store] url`` when set, else ``chatgate.db`` beside the config file if an agent keeps server
        conversations.
        """
        if self.store.url is not None:
            return self.store.url
        if any(agent.conversations == "server" for agent in self.agents.values()):
            return f"sqlite:///{self.base_dir / 'chatgate.db'}"
        return None

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

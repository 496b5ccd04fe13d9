"""chatgate's exceptions, each carrying what its handler needs, and the JSON body of a refusal.

Every exception chatgate raises on purpose is a ``ChatgateError``. The base and the four that cross
layers live here; the others live beside the code that raises them:

ChatgateError
├── ConfigError           the config file is invalid; ``problems`` names each key path
├── RequestError          a client sent something we refuse; becomes a 4xx JSON response
├── ProviderError         the upstream model failed; detail is logged, never sent to the client
├── StoreUnavailable      the store's database cannot be reached; the app answers 503 ``store_unavailable``
│   └── StoreBusy             another connection holds a lock past ``lock_timeout_seconds``: 503 ``store_busy``
├── ThreadError           store/: the store refuses a thread operation; the app maps it to HTTP
│   ├── UnknownThread         404 ``unknown_thread``
│   └── ThreadBusy            409 ``thread_busy``
├── ProducerLost          runlog/: a followed run's producer died without an ending
├── ReplayUnavailable     runlog/: a run's log no longer holds its start
├── ApprovalLedgerError   approvals/: the ledger cannot be asked; nothing runs on that approval
├── PromptRenderError     run/prompts.py: a system prompt cannot be rendered
├── PromptLeak            leak_guard/: an answer repeats the system prompt; the run stops
├── KeysUnavailable       identity/: the issuer's signing keys cannot be fetched
├── MCPUnavailable        mcp/: an MCP server cannot be reached now
├── ToolsUnavailable      run/tools.py: tools an agent must offer cannot be had now (an MCP server down)
├── RunError              run/endings.py: a run cannot go on; the message is safe for the client
└── ServerStopping        run/endings.py: the server is shutting down; the run ends in protocol
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Literal, TypeAlias, get_args

from pydantic import ValidationError
from starlette.responses import JSONResponse

__all__ = [
    "PROVIDER_ERROR_KINDS",
    "ChatgateError",
    "ConfigError",
    "ProviderError",
    "ProviderErrorKind",
    "RequestError",
    "StoreBusy",
    "StoreUnavailable",
    "error_response",
    "invalid_request",
]

ProviderErrorKind: TypeAlias = Literal[
    "connect", "rate_limited", "overloaded", "upstream_5xx", "rejected", "timeout", "interrupted", "other"
]
PROVIDER_ERROR_KINDS: tuple[ProviderErrorKind, ...] = get_args(ProviderErrorKind)
"""The kinds of upstream failure, as metrics label them."""


class ChatgateError(Exception):
    """Base class of every error chatgate raises on purpose."""


class ConfigError(ChatgateError):
    """The configuration is invalid. ``problems`` holds one ``"key.path: what is wrong"`` line each."""

    def __init__(self, problems: Sequence[str]) -> None:
        self.problems = list(problems)
        super().__init__("invalid configuration:\n" + "\n".join(f"  {p}" for p in self.problems))


class RequestError(ChatgateError):
    """A bad request. Rendered as ``{"error": {"code", "message", "details"}}`` with ``status``.

    ``headers`` go on the response too (``Retry-After`` on a 429, ``WWW-Authenticate`` on a 401).
    """

    def __init__(
        self,
        status: int,
        code: str,
        message: str,
        details: Sequence[dict[str, str]] = (),
        *,
        headers: Mapping[str, str] | None = None,
    ) -> None:
        self.status = status
        self.code = code
        self.message = message
        self.details = list(details)
        self.headers = dict(headers or {})
        super().__init__(message)


def error_response(error: RequestError) -> JSONResponse:
    """The JSON body of a refused request: ``{"error": {"code", "message", "details"?}}``."""
    body: dict[str, Any] = {"code": error.code, "message": error.message}
    if error.details:
        body["details"] = error.details
    return JSONResponse({"error": body}, status_code=error.status, headers=error.headers or None)


class ProviderError(ChatgateError):
    """The upstream model failed. ``public_message`` is what a client may see; the rest is for the log.

    ``retryable`` is true for failures worth retrying before any token was sent (connect errors,
    429, 503). ``code`` is the error code the client gets (``context_length_exceeded`` when the prompt
    did not fit the model). ``kind`` is the failure's stable kind for metrics, one of
    ``PROVIDER_ERROR_KINDS``: metrics label on it, never on the wording of ``public_message``.
    """

    def __init__(
        self,
        detail: str,
        *,
        public_message: str = "The model failed.",
        retryable: bool = False,
        code: str = "model_error",
        kind: ProviderErrorKind = "other",
    ) -> None:
        self.public_message = public_message
        self.retryable = retryable
        self.code = code
        self.kind = kind
        super().__init__(detail)


class StoreUnavailable(ChatgateError):
    """The store's database cannot be reached (down, restarting, refusing connections); worth a retry later.

    The message is the detail for the log; a client gets ``code`` and ``public_message``, with
    ``Retry-After: retry_after`` before the stream starts and as the run's error after.
    """

    code = "store_unavailable"
    public_message = "The conversation store is unavailable; retry later."
    retry_after = 5


class StoreBusy(StoreUnavailable):
    """The store's database stayed locked by another connection past ``[store] lock_timeout_seconds``.

    SQLite's "database is locked" (another process writing, or holding ``BEGIN EXCLUSIVE``),
    PostgreSQL's ``lock_timeout``/deadlock errors, and every pooled PostgreSQL connection staying in
    use as long; transient like an outage, so retried where one is.
    """

    code = "store_busy"
    public_message = "The conversation store is busy; retry shortly."
    retry_after = 1


def invalid_request(exc: ValidationError) -> RequestError:
    """The 422 ``invalid_request`` for a request pydantic refused, naming each wrong field.

    The first five are in its message, all in its ``details``.
    """
    errors = exc.errors(include_url=False, include_context=False, include_input=False)
    details = [
        {"field": ".".join(str(part) for part in error["loc"]) or "(body)", "problem": error["msg"]} for error in errors
    ]
    summary = "; ".join(f"{d['field']}: {d['problem']}" for d in details[:5])
    return RequestError(422, "invalid_request", f"the request is invalid: {summary}", details)

"""chatgate's exceptions, each carrying what its handler needs.

ChatgateError
├── ConfigError         the config file is invalid; ``problems`` names each key path
├── RequestError        a client sent something we refuse; becomes a 4xx JSON response
├── ProviderError       the upstream model failed; detail is logged, never sent to the client
└── StoreUnavailable    the thread store cannot be reached; a 503 ``store_unavailable`` with ``Retry-After``
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

__all__ = ["ChatgateError", "ConfigError", "ProviderError", "RequestError", "StoreUnavailable"]


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


class ProviderError(ChatgateError):
    """The upstream model failed. ``public_message`` is what a client may see; the rest is for the log.

    ``retryable`` is true for failures worth retrying before any token was sent (connect errors,
    429, 503). ``code`` is the error code the client gets (``context_length_exceeded`` when the prompt
    did not fit the model).
    """

    def __init__(
        self,
        detail: str,
        *,
        public_message: str = "The model failed.",
        retryable: bool = False,
        code: str = "model_error",
    ) -> None:
        self.public_message = public_message
        self.retryable = retryable
        self.code = code
        super().__init__(detail)


class StoreUnavailable(ChatgateError):
    """The store's database cannot be reached (down, restarting, refusing connections); worth a retry later."""

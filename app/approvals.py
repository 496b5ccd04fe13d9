"""Approval tokens for tools that need a human's yes: honoured only for calls the server requested.

When a tool marked ``requires_approval`` is called, the run pauses and the client is given a token: the
time it was issued and an HMAC over that time, the tool call's id, the tool's name and its arguments,
keyed by a server secret. An approval that comes back later is honoured only if its token matches the
call it names and is younger than ``ttl``, so a client can neither invent an approval, nor change the
arguments of one, nor keep one for later, and the server needs no state between the two requests.

A token answered once is remembered (in this process, until it expires) with the outcome it produced,
so a client that sends the same approval again, such as a retry after a dropped connection, gets that
outcome again instead of running the tool twice.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import secrets
import time
from collections.abc import Callable
from typing import Any, Generic, TypeVar

__all__ = ["ApprovalSigner", "canonical_arguments"]

T = TypeVar("T")


def canonical_arguments(arguments: str | Any) -> str:
    """One spelling of a JSON value, so a round trip through a client cannot change the signature.

    Accepts the model's argument text or an already-parsed value; text that is not JSON is used as is.
    """
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments or "{}")
        except json.JSONDecodeError:
            return arguments
    return json.dumps(arguments, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


class ApprovalSigner(Generic[T]):
    """Makes and checks approval tokens with one secret (random per process unless configured).

    ``T`` is whatever outcome the caller remembers for a settled token.
    """

    def __init__(
        self, secret: bytes | None = None, *, ttl: float = 3600.0, clock: Callable[[], float] = time.time
    ) -> None:
        self._secret = secret or secrets.token_bytes(32)
        self._ttl = ttl
        self._clock = clock
        self._settled: dict[str, tuple[float, T]] = {}

    def token(self, tool_call_id: str, tool_name: str, arguments: str | Any) -> str:
        """The token for this exact call, issued now."""
        issued = int(self._clock())
        return f"apr_{issued:x}_{self._mac(issued, tool_call_id, tool_name, arguments)}"

    def verify(self, token: str, tool_call_id: str, tool_name: str, arguments: str | Any) -> bool:
        """Whether ``token`` was made by this server, for exactly this call, less than ``ttl`` ago."""
        prefix, _, rest = token.partition("_")
        issued_hex, _, mac = rest.partition("_")
        try:
            issued = int(issued_hex, 16)
        except ValueError:
            return False
        if prefix != "apr" or not 0 <= self._clock() - issued <= self._ttl:
            return False
        return hmac.compare_digest(mac, self._mac(issued, tool_call_id, tool_name, arguments))

    def settled(self, token: str) -> T | None:
        """The outcome a token already produced in this process, if it is still remembered."""
        self._forget_expired()
        entry = self._settled.get(token)
        return entry[1] if entry is not None else None

    def settle(self, token: str, outcome: T) -> None:
        """Remember what ``token`` produced, so a replay gets the same outcome until the token expires."""
        self._settled[token] = (self._clock() + self._ttl, outcome)

    def _forget_expired(self) -> None:
        now = self._clock()
        for token in [token for token, (expires, _) in self._settled.items() if expires < now]:
            del self._settled[token]

    def _mac(self, issued: int, tool_call_id: str, tool_name: str, arguments: str | Any) -> str:
        message = "\x1f".join((str(issued), tool_call_id, tool_name, canonical_arguments(arguments))).encode()
        digest = hmac.new(self._secret, message, hashlib.sha256).digest()
        return base64.urlsafe_b64encode(digest).rstrip(b"=").decode()

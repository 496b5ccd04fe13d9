"""Approval tokens for tools that need a human's yes: honoured only for calls the server requested.

When a tool marked ``requires_approval`` is called, the run pauses and the client is given a token:
``apr_<issue time>_<mac>``, where the issue time is Unix seconds in lowercase hex without leading zeros
and the mac is an unpadded base64url HMAC-SHA256, keyed by a server secret, over the agent's name, the
tool call's id, the tool's name, its canonical arguments and the issue time. An approval that comes back
later is honoured only if its token has exactly that one spelling, matches the call it names on the
agent it is sent to, and is younger than ``ttl``: a client can neither invent an approval, nor change the
arguments of one, nor move it to another agent, nor keep it for later.

A token has one spelling only, so the ledger of answered approvals (app/approvals/ledger.py), keyed on the
token, cannot be walked around by writing the same token differently. Nothing here ever raises on what a
client sends: a malformed token, or arguments holding a lone surrogate, simply does not verify.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import re
import secrets
import time
from collections.abc import Callable
from typing import Any

__all__ = ["TOKEN_TTL", "ApprovalSigner", "canonical_arguments", "is_canonical_token", "new_secret"]

TOKEN_TTL = 3600.0
"""Seconds an approval token is honoured after it was issued."""

# 1 to 16 lowercase hex digits, the first not 0; then the 43 characters of an unpadded 32-byte base64url mac.
_TOKEN = re.compile(r"apr_([1-9a-f][0-9a-f]{0,15})_([A-Za-z0-9_-]{43})", re.ASCII)


def new_secret() -> bytes:
    """A random signing key, for a process whose config sets no ``approval_secret``."""
    return secrets.token_bytes(32)


def is_canonical_token(token: object) -> bool:
    """Whether ``token`` is spelled the one way this server spells tokens (its mac is not checked)."""
    return isinstance(token, str) and _TOKEN.fullmatch(token) is not None


def canonical_arguments(arguments: str | Any) -> str:
    """One ASCII spelling of a JSON value, so a round trip through a client cannot change the signature.

    Accepts the model's argument text or an already-parsed value; text that is not JSON is kept as a
    JSON string. Never raises: lone surrogates are written as ``\\ud800`` escapes.
    """
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments or "{}")
        except (ValueError, RecursionError):  # not JSON, or nested too deep to parse
            return json.dumps(["text", arguments], ensure_ascii=True)
    try:
        return json.dumps(arguments, sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    except (TypeError, ValueError, RecursionError):
        return json.dumps(["repr", repr(arguments)], ensure_ascii=True)


class ApprovalSigner:
    """Makes and checks approval tokens with one secret; it keeps no state between requests."""

    def __init__(self, secret: bytes, *, ttl: float = TOKEN_TTL, clock: Callable[[], float] = time.time) -> None:
        self._secret = secret
        self.ttl = ttl
        self._clock = clock

    def token(self, agent: str, tool_call_id: str, tool_name: str, arguments: str | Any) -> str:
        """The token for this exact call on ``agent``, issued now."""
        issued = max(1, int(self._clock()))
        return f"apr_{issued:x}_{self._mac(issued, agent, tool_call_id, tool_name, arguments)}"

    def verify(self, token: str, agent: str, tool_call_id: str, tool_name: str, arguments: str | Any) -> bool:
        """Whether ``token`` is canonical, made by this server for exactly this call, and not expired."""
        match = _TOKEN.fullmatch(token) if isinstance(token, str) else None
        if match is None:
            return False
        issued = int(match[1], 16)
        if not 0 <= self._clock() - issued <= self.ttl:
            return False
        return hmac.compare_digest(match[2], self._mac(issued, agent, tool_call_id, tool_name, arguments))

    def _mac(self, issued: int, agent: str, tool_call_id: str, tool_name: str, arguments: str | Any) -> str:
        # A JSON array keeps the fields apart whatever they contain; ensure_ascii makes it encodable.
        fields = ["chatgate-approval-1", agent, tool_call_id, tool_name, canonical_arguments(arguments), issued]
        message = json.dumps(fields, ensure_ascii=True).encode("ascii")
        digest = hmac.new(self._secret, message, hashlib.sha256).digest()
        return base64.urlsafe_b64encode(digest).rstrip(b"=").decode("ascii")

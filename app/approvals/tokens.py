"""Approval tokens for tools that need a human's yes: honoured only for calls the server requested.

When a tool marked ``requires_approval`` is called, the run pauses and the client is given a token:
``apr_<issue time>_<nonce>_<mac>``, where the issue time is Unix seconds in lowercase hex without leading
zeros, the nonce is 16 random bytes as unpadded base64url (22 characters), and the mac is an unpadded
base64url HMAC-SHA256, keyed by a server secret, over the agent's name, the approval's scope, the tool
call's id, the tool's name, its canonical arguments, the issue time and the nonce. The nonce makes every
issued token unique, even for two identical calls issued in the same second (a model or server that
reuses tool call ids). The scope (``approval_scope``) names whose approval it is: the agent, the owner
(caller key, and end user) and the stored thread, if any. An approval that comes back later is honoured
only if its token has exactly that one spelling, matches the call it names on the agent and in the scope
it is sent to, and is younger than ``ttl``: a client can neither invent an approval, nor change the
arguments of one, nor move it to another agent, key, user or thread, nor keep it for later.

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

__all__ = [
    "TOKEN_TTL",
    "ApprovalSigner",
    "approval_scope",
    "canonical_arguments",
    "is_canonical_token",
    "new_secret",
]

TOKEN_TTL = 3600.0
"""Seconds an approval token is honoured after it was issued."""

# 1 to 16 lowercase hex digits, the first not 0; the 22 characters of an unpadded 16-byte base64url nonce;
# then the 43 characters of an unpadded 32-byte base64url mac. The fixed lengths keep the parts apart,
# although ``_`` is also a base64url character.
_TOKEN = re.compile(r"apr_([1-9a-f][0-9a-f]{0,15})_([A-Za-z0-9_-]{22})_([A-Za-z0-9_-]{43})", re.ASCII)


def approval_scope(agent: str, owner: str, thread: str | None = None) -> str:
    """Whose approvals these are: ``agent``'s, for ``owner`` (``Caller.owner``), on stored ``thread`` if any.

    Signed into every token and part of every ledger entry's key, so an approval issued in one scope is
    refused in any other. One JSON spelling keeps the fields apart whatever they contain.
    """
    return json.dumps([agent, owner, thread], ensure_ascii=True)


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

    def token(self, agent: str, tool_call_id: str, tool_name: str, arguments: str | Any, *, scope: str = "") -> str:
        """A new token for this exact call on ``agent`` in ``scope``, issued now; never the same twice."""
        issued = max(1, int(self._clock()))
        nonce = base64.urlsafe_b64encode(secrets.token_bytes(16)).rstrip(b"=").decode("ascii")
        mac = self._mac(issued, nonce, scope, agent, tool_call_id, tool_name, arguments)
        return f"apr_{issued:x}_{nonce}_{mac}"

    def verify(
        self, token: str, agent: str, tool_call_id: str, tool_name: str, arguments: str | Any, *, scope: str = ""
    ) -> bool:
        """Whether ``token`` is canonical, made by this server for exactly this call and scope, and not expired."""
        match = _TOKEN.fullmatch(token) if isinstance(token, str) else None
        if match is None:
            return False
        issued = int(match[1], 16)
        if not 0 <= self._clock() - issued <= self.ttl:
            return False
        expected = self._mac(issued, match[2], scope, agent, tool_call_id, tool_name, arguments)
        return hmac.compare_digest(match[3], expected)

    def _mac(
        self, issued: int, nonce: str, scope: str, agent: str, tool_call_id: str, tool_name: str, arguments: str | Any
    ) -> str:
        # A JSON array keeps the fields apart whatever they contain; ensure_ascii makes it encodable.
        # The nonce goes in as spelled: a respelling of it (padding, case) no longer verifies.
        canonical = canonical_arguments(arguments)
        fields = ["chatgate-approval-2", agent, scope, tool_call_id, tool_name, canonical, issued, nonce]
        message = json.dumps(fields, ensure_ascii=True).encode("ascii")
        digest = hmac.new(self._secret, message, hashlib.sha256).digest()
        return base64.urlsafe_b64encode(digest).rstrip(b"=").decode("ascii")

"""Approval tokens for tools that need a human's yes: honoured only for calls the server requested.

When a tool marked ``requires_approval`` is called, the run pauses and the client is given a token: an
HMAC over the tool call's id, the tool's name and its arguments, keyed by a server secret. An approval
that comes back later is honoured only if its token matches the call it names, so a client can neither
invent an approval nor change the arguments of one, and the server keeps no state between the requests.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import secrets
from typing import Any

__all__ = ["ApprovalSigner", "canonical_arguments"]


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


class ApprovalSigner:
    """Makes and checks approval tokens with one secret (random per process unless configured)."""

    def __init__(self, secret: bytes | None = None) -> None:
        self._secret = secret or secrets.token_bytes(32)

    def token(self, tool_call_id: str, tool_name: str, arguments: str | Any) -> str:
        """The token for this exact call."""
        message = "\x1f".join((tool_call_id, tool_name, canonical_arguments(arguments))).encode()
        digest = hmac.new(self._secret, message, hashlib.sha256).digest()
        return "apr_" + base64.urlsafe_b64encode(digest).rstrip(b"=").decode()

    def verify(self, token: str, tool_call_id: str, tool_name: str, arguments: str | Any) -> bool:
        """Whether ``token`` was made by this server for exactly this call."""
        return hmac.compare_digest(token, self.token(tool_call_id, tool_name, arguments))

"""``Connection: close`` on every answer given before the request's body was read whole.

A refusal that comes before the body (413 on a declared length, 401, 403, 415, 429, 503...) leaves the
rest of that body on the connection, where the server would read it as the next request's head. So such
an answer says ``connection: close``: an HTTP/1.1 client then sends its next request on a new
connection instead of failing on this one. ``chatgate serve`` discards what still arrives for a short
linger before closing (app/serve/connections.py), so the client reads the refusal whole.
"""

from __future__ import annotations

from starlette.types import Message, Receive, Scope

__all__ = ["UnreadBody"]

_CLOSE = (b"connection", b"close")


class UnreadBody:
    """Tracks whether a request's body is still partly unread, through the ``receive`` it hands out."""

    __slots__ = ("_receive", "pending")

    def __init__(self, scope: Scope, receive: Receive) -> None:
        self._receive = receive
        self.pending = scope.get("http_version") in ("1.0", "1.1") and _declares_body(scope)
        """Whether body bytes the app has not received may still be on the connection."""

    async def receive(self) -> Message:
        """The next message of the request, noting when its body has been read to the end."""
        message = await self._receive()
        if not message.get("more_body", False):
            self.pending = False
        return message

    def close_if_unread(self, start: Message) -> None:
        """Add ``connection: close`` to ``start`` (an ``http.response.start``) when the body is unread."""
        if self.pending:
            start["headers"] = [*start.get("headers", ()), _CLOSE]


def _declares_body(scope: Scope) -> bool:
    for name, value in scope["headers"]:
        if name == b"content-length":
            return value.strip() not in (b"0", b"")
        if name == b"transfer-encoding":
            return True
    return False

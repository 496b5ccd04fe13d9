"""The HTTP/1.1 connections ``chatgate serve`` accepts: a cap on each request head, and timeouts.

uvicorn's httptools protocol keeps a connection for as long as the client wants: a connection that never
sends a byte, a head sent a byte at a time and a body that never ends are each held forever, and a head
has no size limit (llhttp gathers a 64 MiB header whole). ``guarded_protocol`` answers with a subclass
that, per ``[server]``:

- closes a connection idle for ``idle_timeout_seconds``, before its first request and between
  requests (uvicorn's keep-alive timeout, which it arms only after a response);
- answers ``431`` once a head passes ``max_head_bytes``, and ``408`` when it is not whole within
  ``head_timeout_seconds`` of its first byte;
- answers ``408`` when a body is not whole within ``body_timeout_seconds`` of its head, or closes the
  connection when an answer has already started.

Bytes that arrive while an earlier request's answer still runs (pipelining, a stray CRLF) never cut it:
their timer is checked again one timeout later.

No timer runs from a request's last byte to its answer's last byte, so streams last as long as they
need, and a request that arrives whole in one read arms none at all (one timer per connection at most:
server CPU per ``GET /healthz`` stayed within the noise, about 65 us either way). After a refusal the
connection sends nothing more, discards what still arrives for a short linger and closes: closing at
once with unread bytes would reset it and could lose the refusal.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from typing import Any, Literal

from uvicorn.protocols.http.httptools_impl import STATUS_LINE, HttpToolsProtocol

from chatgate.config import ServerSettings

__all__ = ["LINGER_SECONDS", "guarded_protocol"]

LINGER_SECONDS = 2.0
"""How long a refused connection keeps discarding what the client still sends before it closes."""

_Phase = Literal["idle", "head", "body", "refused"]


def guarded_protocol(settings: ServerSettings) -> type[asyncio.Protocol]:
    """The httptools protocol of uvicorn bounded by ``settings`` (the ``http`` class given to ``uvicorn.Config``)."""
    return type("GuardedHttpToolsProtocol", (_GuardedProtocol,), {"settings": settings})


class _GuardedProtocol(HttpToolsProtocol):
    settings: ServerSettings

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.timeout_keep_alive = self.settings.idle_timeout_seconds  # type: ignore[assignment]  # a float is fine
        self._phase: _Phase = "idle"
        self._head_bytes = 0
        self._chunk_bytes = 0
        self._timer: asyncio.TimerHandle | None = None
        self._timed: _Phase | None = None  # what the timer is for

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        """Start serving, closing the connection if no request begins within the idle timeout."""
        super().connection_made(transport)
        self.timeout_keep_alive_task = self.loop.call_later(self.timeout_keep_alive, self.timeout_keep_alive_handler)

    def connection_lost(self, exc: Exception | None) -> None:
        """Stop the timers, then let uvicorn end the request."""
        self._set_timer(None)
        super().connection_lost(exc)

    def data_received(self, data: bytes) -> None:
        """Feed ``data`` to the parser; a head or body it leaves unfinished gets its timer then.

        A request that arrives whole in one read (the usual case) arms no timer at all.
        """
        if self._phase == "refused":
            return
        before = self._phase
        if before == "idle":
            self._phase, self._head_bytes = "head", 0
        self._chunk_bytes = len(data)
        super().data_received(data)
        phase = self._phase
        if phase == "head" and not self.transport.is_closing():
            # A chunk that began inside a body ends the last request before this head starts: not counted.
            self._head_bytes += len(data) if before != "body" else 0
            if self._head_bytes > self.settings.max_head_bytes:
                self._refuse_head()
            elif self._timed != "head":
                self._set_timer("head", self.settings.head_timeout_seconds, self._head_timed_out)
        elif phase == "body" and self._timed != "body":
            self._set_timer("body", self.settings.body_timeout_seconds, self._body_timed_out)

    def on_headers_complete(self) -> None:
        """Refuse an over-long head, else start the request (its body timer starts after this read)."""
        if self._phase == "refused":
            return
        limit = self.settings.max_head_bytes
        within_limit = self._head_bytes + self._chunk_bytes <= limit  # then it cannot be too long
        if not within_limit and len(self.url) + sum(len(n) + len(v) + 4 for n, v in self.headers) > limit:
            self._refuse_head()
            return
        upgrading = self.parser.should_upgrade() and self._should_upgrade()  # the connection leaves HTTP
        self._phase = "idle" if upgrading else "body"
        super().on_headers_complete()
        if self.cycle is not None and not upgrading:
            self.cycle.transport = _LingeringClose(self)  # type: ignore[assignment]  # what the cycle uses of one

    def on_body(self, body: bytes) -> None:
        """Pass body bytes on, unless the request was refused."""
        if self._phase != "refused":
            super().on_body(body)

    def on_message_complete(self) -> None:
        """The request is whole: no timer until its answer is (streams take as long as they need)."""
        if self._phase == "refused":
            return
        self._phase = "idle"
        if self._timer is not None:
            self._set_timer(None)
        super().on_message_complete()

    def on_response_complete(self) -> None:
        """Once answered, a request whose body is still coming (a refusal) ends the connection."""
        super().on_response_complete()
        if self._phase == "body" and not self.pipeline:
            self._linger()  # reading the rest only to throw it away would take as long as the client likes

    def _head_timed_out(self) -> None:
        limit = self.settings.head_timeout_seconds
        cycle = self.cycle
        if cycle is not None and not (cycle.response_complete or cycle.disconnected):
            # Bytes after a request whose answer still runs (a pipelined head, or the stray CRLF some
            # clients send after a body): its answer is not cut for them; they are looked at again later.
            self._set_timer("head", limit, self._head_timed_out)
            return
        self._refuse(
            408, "head_timeout", f"the request head took longer than [server] head_timeout_seconds = {limit:g}"
        )

    def _refuse_head(self) -> None:
        limit = self.settings.max_head_bytes
        self._refuse(431, "head_too_large", f"the request head is larger than [server] max_head_bytes = {limit} bytes")

    def _body_timed_out(self) -> None:
        cycle = self.cycle
        if self.pipeline:  # queued behind a running answer, its body unread until that ends: look again later
            self._set_timer("body", self.settings.body_timeout_seconds, self._body_timed_out)
            return
        if cycle is None or cycle.response_started:
            self._linger()  # too late for an answer of our own
            return
        cycle.disconnected = True  # the app's next receive is a disconnect, and what it sends is dropped
        cycle.message_event.set()
        limit = self.settings.body_timeout_seconds
        self._refuse(
            408, "body_timeout", f"the request body took longer than [server] body_timeout_seconds = {limit:g}"
        )

    def _refuse(self, status: int, code: str, message: str) -> None:
        """Answer ``status`` with a JSON error when no other answer is under way, then linger and close."""
        cycle = self.cycle
        if not self.transport.is_closing() and (cycle is None or cycle.response_complete or cycle.disconnected):
            body = json.dumps({"error": {"code": code, "message": message}}).encode()
            head = [STATUS_LINE[status]]
            head.extend(name + b": " + value + b"\r\n" for name, value in self.server_state.default_headers)
            head.append(
                b"content-type: application/json\r\ncontent-length: %d\r\nconnection: close\r\n\r\n" % len(body)
            )
            self.transport.write(b"".join(head) + body)
            self.logger.info("%s %s: %s", status, code, message)
        self._linger()

    def _linger(self) -> None:
        """Send nothing more, discard what still arrives, and close once the client does or the linger ends."""
        self._phase = "refused"
        self._unset_keepalive_if_required()
        self._set_timer("refused", LINGER_SECONDS, self._close)
        if self.transport.is_closing():
            return
        if self.transport.can_write_eof():
            self.transport.write_eof()
            self.flow.resume_reading()
        else:
            self.transport.close()

    def close_after_answer(self) -> None:
        """Close once an answer is sent: at once, or after a linger when its request's body is still coming."""
        if self._phase == "body":
            self._linger()  # closing now, with unread bytes, would reset the connection and could lose the answer
        else:
            self.transport.close()

    def _close(self) -> None:
        if not self.transport.is_closing():
            self.transport.close()

    def _set_timer(self, phase: _Phase | None, delay: float = 0, callback: Callable[[], None] | None = None) -> None:
        """Arm the one timer of the connection for ``phase`` (``None`` only stops it)."""
        if self._timer is not None:
            self._timer.cancel()
        self._timed = phase
        self._timer = None if phase is None or callback is None else self.loop.call_later(delay, callback)


class _LingeringClose:
    """The transport as a request's cycle sees it: ``close`` (an answer with ``connection: close``) lingers.

    uvicorn closes the connection as soon as such an answer is sent; a refusal sent before its body was
    read (app/web/unread_body.py) would then reset the connection under the client. Writes go straight to
    the transport.
    """

    __slots__ = ("_protocol", "is_closing", "write")

    def __init__(self, protocol: _GuardedProtocol) -> None:
        self._protocol = protocol
        self.write = protocol.transport.write
        self.is_closing = protocol.transport.is_closing

    def close(self) -> None:
        """Close now, or after the linger when the request's body is still arriving."""
        self._protocol.close_after_answer()

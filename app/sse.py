"""``EventStreamResponse``: the one place a stream meets the socket.

Three tasks race inside one task group, and whichever finishes first ends the others:

- the body loop sends each pre-framed SSE chunk as it comes (one ASGI send per chunk, nothing else
  on the hot path but a flag and a count);
- a disconnect watcher: when the client goes away it cancels the group, the body loop stops, and
  ``aclosing`` closes the event generator chain at once, which closes the upstream request;
- a keepalive: after ``keepalive`` seconds with nothing sent it writes a ``: ping`` comment, which
  both UI clients ignore and which keeps proxies from timing the connection out.

Frames are LF-only (``data: ...\\n\\n``), as AG-UI 1.0 clients require; the adapters build them.
"""

from __future__ import annotations

import logging
import time
from collections.abc import AsyncGenerator, Mapping
from contextlib import aclosing

import anyio
from starlette.types import Receive, Scope, Send

from chatgate.metrics import StreamMeter

__all__ = ["KEEPALIVE_FRAME", "RAW_SEND_KEY", "EventStreamResponse"]

logger = logging.getLogger("chatgate.sse")

KEEPALIVE_FRAME = b": ping\n\n"
RAW_SEND_KEY = "chatgate.raw_send"
"""Where ``ChatgateApp`` leaves the server's unwrapped ``send`` in the ASGI scope."""


class EventStreamResponse:
    """An ASGI response streaming SSE frames from ``chunks``. See the module docstring."""

    def __init__(
        self,
        chunks: AsyncGenerator[bytes, None],
        headers: Mapping[str, str],
        *,
        keepalive: float = 15.0,
        meter: StreamMeter | None = None,
    ) -> None:
        self._chunks = chunks
        self._headers = [(b"content-type", b"text/event-stream")] + [
            (key.lower().encode("latin-1"), value.encode("latin-1"))
            for key, value in headers.items()
            if key.lower() != "content-type"
        ]
        self._keepalive = keepalive
        self._sent = False
        self._meter = meter
        self._events = 0
        self._first_event_at: float | None = None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Stream the frames until they end or the client disconnects."""
        await send({"type": "http.response.start", "status": 200, "headers": self._headers})
        # Starlette wraps ``send`` three times to learn whether a response has started; that is known
        # now, so the body goes straight to the server's own ``send`` when the app left it in scope.
        send = scope.get(RAW_SEND_KEY, send)
        meter = self._meter
        if meter is not None:
            meter.opened()
        try:
            async with anyio.create_task_group() as group:
                group.start_soon(self._watch_disconnect, receive, group.cancel_scope)
                group.start_soon(self._send_keepalives, send)
                try:
                    await self._send_body(send)
                finally:
                    group.cancel_scope.cancel()
        finally:
            if meter is not None:
                meter.closed(self._events, self._first_event_at)

    async def _send_body(self, send: Send) -> None:
        # Counted in a local and stored once at the end: nothing per event but an add and a compare.
        count = 0
        try:
            async with aclosing(self._chunks) as chunks:
                async for chunk in chunks:
                    await send({"type": "http.response.body", "body": chunk, "more_body": True})
                    self._sent = True
                    count += 1
                    if count == 1:
                        self._first_event_at = time.perf_counter()
        except Exception:
            # Adapters end their streams in-protocol; reaching here is a bug, so end the body cleanly.
            logger.exception("stream encoder failed")
        finally:
            self._events = count
        await send({"type": "http.response.body", "body": b"", "more_body": False})

    async def _send_keepalives(self, send: Send) -> None:
        while True:
            await anyio.sleep(self._keepalive)
            if not self._sent:
                await send({"type": "http.response.body", "body": KEEPALIVE_FRAME, "more_body": True})
            self._sent = False

    @staticmethod
    async def _watch_disconnect(receive: Receive, scope: anyio.CancelScope) -> None:
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                scope.cancel()
                return

"""``EventStreamResponse``: the one place a stream meets the socket.

The request's own task runs the body loop: it sends each pre-framed SSE chunk as it comes (one ASGI
send per chunk, nothing else on the hot path but a count). One helper task per stream waits on
``receive`` and does two jobs:

- when the client goes away it cancels the body loop, and ``aclosing`` closes the event generator
  chain at once, which closes the upstream request;
- when ``keepalive`` seconds pass with nothing sent it writes a ``: ping`` comment, which both UI
  clients ignore and which keeps proxies from timing the connection out.

Plain asyncio rather than a task group with a task per job: opening thousands of streams at once
spent a tenth of the server's CPU spawning those tasks (docs/performance.md).

Frames are LF-only (``data: ...\\n\\n``), as AG-UI 1.0 clients require; the adapters build them.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import AsyncGenerator, Mapping
from contextlib import aclosing

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
        self._client_gone = False
        self._body_done = False

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Stream the frames until they end or the client disconnects."""
        await send({"type": "http.response.start", "status": 200, "headers": self._headers})
        # Starlette wraps ``send`` three times to learn whether a response has started; that is known
        # now, so the body goes straight to the server's own ``send`` when the app left it in scope.
        send = scope.get(RAW_SEND_KEY, send)
        meter = self._meter
        if meter is not None:
            meter.opened()
        body = asyncio.current_task()
        assert body is not None
        watcher = asyncio.get_running_loop().create_task(self._watch(receive, send, body))
        try:
            await self._send_body(send)
        except asyncio.CancelledError:
            if not self._client_gone or body.uncancel() > 0:
                raise  # cancelled from outside, not (only) by the watcher
        finally:
            self._body_done = True
            watcher.cancel()
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

    async def _watch(self, receive: Receive, send: Send, body: asyncio.Task[None]) -> None:
        """Cancel ``body`` when the client disconnects; send a ping after ``keepalive`` idle seconds."""
        while True:
            try:
                async with asyncio.timeout(self._keepalive):
                    message = await receive()
            except TimeoutError:
                if not self._sent:
                    await send({"type": "http.response.body", "body": KEEPALIVE_FRAME, "more_body": True})
                self._sent = False
                continue
            if message["type"] == "http.disconnect":
                if not self._body_done:
                    self._client_gone = True
                    body.cancel()
                return

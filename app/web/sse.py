"""``EventStreamResponse``: the one place a stream meets the socket.

Two tasks per stream, and one more that waits on the client:

- a producer task pulls the pre-framed SSE chunks from the event chain and queues them (unless the
  chunks come ``joined`` already: a run log's follower joins what piled up, so the request's task reads
  it and sends each chunk itself, saving a task switch per frame);
- the request's own task sends whatever is queued as one ASGI send each time it runs. When frames
  come one by one (a model streaming at its pace) that is one send per frame, as before; when many
  are ready at once (a burst from the upstream read in one go, the built-in model) they leave in one
  socket write instead of one each. The producer waits while more than ``_QUEUE_LIMIT`` bytes are
  unsent, so a slow client holds the model back rather than filling memory;
- a watcher waits on ``receive``: when the client goes away it cancels the stream, and ``aclosing``
  closes the event generator chain at once, which closes the upstream request; when ``keepalive``
  seconds pass with nothing sent it writes a ``: ping`` comment, which both UI clients ignore and
  which keeps proxies from timing the connection out.

Plain asyncio tasks rather than an anyio task group: opening thousands of streams at once spent a
tenth of the server's CPU in the group's spawning (docs/performance.md).

Frames are LF-only (``data: ...\\n\\n``), as AG-UI 1.0 clients require; the adapters build them.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import AsyncGenerator, Callable, Mapping
from contextlib import aclosing

from starlette.types import Receive, Scope, Send

from chatgate.telemetry import StreamMeter

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
        joined: bool = False,
        run: asyncio.Task[None] | None = None,
        closed: Callable[[], None] | None = None,
    ) -> None:
        self._chunks = chunks
        self._closed = closed
        """Called once the stream is over and its event chain closed (a stateless run's span ends there)."""
        self._joined = joined
        self.run = run
        """The detached run this stream follows, if any: it may outlive the stream (a stream slot waits for it)."""
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
        """Stream the frames until they end or the client disconnects; then call ``closed``."""
        try:
            await self._stream(scope, receive, send)
        finally:
            if self._closed is not None:
                self._closed()

    async def _stream(self, scope: Scope, receive: Receive, send: Send) -> None:
        await send({"type": "http.response.start", "status": 200, "headers": self._headers})
        # Starlette wraps ``send`` three times to learn whether a response has started; that is known
        # now, so the body goes straight to the server's own ``send`` when the app left it in scope.
        send = scope.get(RAW_SEND_KEY, send)
        meter = self._meter
        if meter is not None:
            meter.opened()
        body = asyncio.current_task()
        assert body is not None
        loop = asyncio.get_running_loop()
        if self._joined:
            producer = None
            sending = self._send_each(send)
        else:
            queue = _FrameQueue(loop)
            producer = loop.create_task(self._produce(queue))
            sending = self._send_queued(queue, send)
        watcher = loop.create_task(self._watch(receive, send, body))
        try:
            await sending
        except asyncio.CancelledError:
            if not self._client_gone or body.uncancel() > 0:
                raise  # cancelled from outside, not (only) by the watcher
        finally:
            self._body_done = True
            watcher.cancel()
            if producer is not None and not producer.done():
                producer.cancel()  # its ``aclosing`` closes the event chain, and so the upstream request
                await asyncio.wait([producer])
            if meter is not None:
                meter.closed(self._events, self._first_event_at)

    async def _send_queued(self, queue: _FrameQueue, send: Send) -> None:
        while True:
            if queue.frames:
                await send({"type": "http.response.body", "body": queue.take(), "more_body": True})
                self._sent = True
            elif queue.ended:
                break
            else:
                await queue.wait()
        await self._end_body(send)

    async def _send_each(self, send: Send) -> None:
        # ``_produce``'s loop with a send in place of the queue. Kept as two loops: one loop handing each
        # chunk to a callback costs the producer a coroutine call per frame (about 0.3 µs of its 6 µs in
        # bench/app_cpu.py --model canned).
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
            logger.exception("stream encoder failed")  # as in ``_produce``
        finally:
            self._events = count
        await self._end_body(send)

    async def _produce(self, queue: _FrameQueue) -> None:
        # Counted in a local and stored once at the end: nothing per event but an add and a compare.
        count = 0
        try:
            async with aclosing(self._chunks) as chunks:
                async for chunk in chunks:
                    queue.put(chunk)
                    count += 1
                    if count == 1:
                        self._first_event_at = time.perf_counter()
                    if queue.size > _QUEUE_LIMIT:
                        await queue.wait()
        except Exception:
            # Adapters end their streams in-protocol; reaching here is a bug, so end the body cleanly.
            logger.exception("stream encoder failed")
        finally:
            self._events = count
            queue.end()

    async def _end_body(self, send: Send) -> None:
        self._body_done = True  # no keepalive after the end
        await send({"type": "http.response.body", "body": b"", "more_body": False})

    async def _watch(self, receive: Receive, send: Send, body: asyncio.Task[None]) -> None:
        """Cancel ``body`` when the client disconnects; send a ping after ``keepalive`` idle seconds."""
        while True:
            try:
                async with asyncio.timeout(self._keepalive):
                    message = await receive()
            except TimeoutError:
                if not self._sent and not self._body_done:
                    await send({"type": "http.response.body", "body": KEEPALIVE_FRAME, "more_body": True})
                self._sent = False
                continue
            if message["type"] == "http.disconnect":
                if not self._body_done:
                    self._client_gone = True
                    body.cancel()
                return


_QUEUE_LIMIT = 2**16
"""Unsent bytes above which the producer waits for the client to take them."""


class _FrameQueue:
    """Frames made and not yet sent.

    Producer and sender share one waiter slot: the producer only waits while frames are queued (so the
    sender is not waiting), the sender only while none are. A side that was woken but has not run yet
    may find its slot taken by the other side's new wait; it then leaves that one alone.
    """

    __slots__ = ("_loop", "_waiter", "ended", "frames", "size")

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self._loop = loop
        self._waiter: asyncio.Future[None] | None = None
        self.frames: list[bytes] = []
        self.size = 0
        self.ended = False

    def put(self, frame: bytes) -> None:
        """Queue one frame."""
        self.frames.append(frame)
        self.size += len(frame)
        self._wake()

    def take(self) -> bytes:
        """Every queued frame, joined."""
        frames = self.frames
        data = frames[0] if len(frames) == 1 else b"".join(frames)
        self.frames = []
        self.size = 0
        self._wake()
        return data

    def end(self) -> None:
        """No more frames will come."""
        self.ended = True
        self._wake()

    async def wait(self) -> None:
        """Until the other side puts, takes or ends."""
        waiter = self._waiter = self._loop.create_future()
        try:
            await waiter
        finally:
            if self._waiter is waiter:
                self._waiter = None

    def _wake(self) -> None:
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

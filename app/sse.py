"""``EventStreamResponse``: the one place a stream meets the socket.

One task sends, and one more waits on the client:

- the request's own task steps the event chain by hand (``_Chain``): every frame the chain makes
  without waiting is collected, and the moment it would wait (on its upstream, its model, a run log)
  what was collected leaves in one ASGI send. A model streaming at its pace gives one send per frame;
  a burst (an upstream read holding many events, the built-in model) leaves in one socket write
  instead of one each. No second task and no queue: a paced frame wakes one task, not two. Over
  ``_BATCH_BYTES`` collected, they are sent without waiting for the chain to, and the server's own
  flow control holds a fast chain back behind a slow client;
- a watcher waits on ``receive``: when the client goes away it cancels the stream, and ``aclosing``
  closes the event generator chain at once, which closes the upstream request; when ``keepalive``
  seconds pass with nothing sent it writes a ``: ping`` comment, which both UI clients ignore and
  which keeps proxies from timing the connection out.

A cancellation that reaches a send while the chain waits is the chain's: it is thrown into the chain,
which may turn it into frames (a provider's timeout ends the run in protocol) and go on, or end.
The interrupted frames are sent again, since uvicorn waits for a slow client before it writes, never
after. Plain asyncio rather than an anyio task group: opening thousands of streams at once spent a
tenth of the server's CPU in the group's spawning (docs/performance.md).

Frames are LF-only (``data: ...\\n\\n``), as AG-UI 1.0 clients require; the adapters build them.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import AsyncGenerator, Callable, Coroutine, Generator, Mapping
from contextlib import aclosing
from typing import Any

from starlette.types import Receive, Scope, Send

from chatgate.metrics import StreamMeter

__all__ = ["KEEPALIVE_FRAME", "RAW_SEND_KEY", "EventStreamResponse"]

logger = logging.getLogger("chatgate.sse")

KEEPALIVE_FRAME = b": ping\n\n"
RAW_SEND_KEY = "chatgate.raw_send"
"""Where ``ChatgateApp`` leaves the server's unwrapped ``send`` in the ASGI scope."""

_BATCH_BYTES = 2**16
"""Collected bytes above which they are sent without waiting for the chain to wait."""


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
            await self._stream(send)
        except asyncio.CancelledError:
            if not self._client_gone or body.uncancel() > 0:
                raise  # cancelled from outside, not (only) by the watcher
        finally:
            self._body_done = True
            watcher.cancel()
            if meter is not None:
                meter.closed(self._events, self._first_event_at)

    async def _stream(self, send: Send) -> None:
        ready: list[bytes] = []
        try:
            async with aclosing(self._chunks) as chunks:
                chain = _Chain(chunks.__anext__)
                size = 0
                while True:
                    frame = chain.next_now()
                    if frame is not None:
                        ready.append(frame)
                        size += len(frame)
                        if size <= _BATCH_BYTES:
                            continue
                    if ready:
                        await self._send_ready(send, ready, chain)
                        size = 0
                    if chain.waiting:
                        frame = await chain.rest()
                        if frame is not None:
                            ready.append(frame)
                            size = len(frame)
                    elif chain.ended:
                        break
        except Exception:
            # Adapters end their streams in-protocol; reaching here is a bug, so end the body cleanly.
            logger.exception("stream encoder failed")
            if ready:
                await self._send_ready(send, ready, None)
        await self._end_body(send)

    async def _send_ready(self, send: Send, ready: list[bytes], chain: _Chain | None) -> None:
        """Send the collected frames as one body chunk; on return ``ready`` is empty."""
        while ready:
            try:
                await send({"type": "http.response.body", "body": b"".join(ready), "more_body": True})
            except BaseException as interruption:
                if chain is None or not chain.waiting:
                    raise
                frame = chain.throw(interruption)  # the chain's to handle; re-raised if it does not
                if frame is not None:
                    ready.append(frame)
                continue
            if self._first_event_at is None:
                self._first_event_at = time.perf_counter()
            self._events += len(ready)
            self._sent = True
            ready.clear()

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


class _Chain:
    """An async generator of frames, stepped by hand so the sender knows when it would wait.

    ``next_now`` runs the generator's next step inside the calling task, as ``await`` would, until
    it either has its frame (returned) or must wait (``waiting``); ``rest`` then waits with it and
    returns the frame. Whatever interrupts the task meanwhile goes into the generator (``throw``), so
    a step is always over before the sender leaves, and ``aclose`` finds the generator at rest.
    """

    __slots__ = ("_anext", "_awaited", "_step", "ended", "waiting")

    def __init__(self, anext: Callable[[], Coroutine[Any, Any, bytes]]) -> None:
        self._anext = anext
        self._step: Coroutine[Any, Any, bytes] | None = None
        self._awaited: Any = None
        self.waiting = False
        self.ended = False

    def next_now(self) -> bytes | None:
        """The next frame if the generator makes it without waiting; else None (``waiting`` or ``ended``)."""
        if self.ended:
            return None
        step = self._step = self._anext()
        return self._run(step.send, None)

    def throw(self, error: BaseException) -> bytes | None:
        """Deliver ``error`` where the waiting generator waits; its frame if it goes on to make one.

        A cancellation also cancels what the generator awaits, as a task's cancellation does.
        """
        assert self._step is not None
        if isinstance(error, asyncio.CancelledError) and isinstance(self._awaited, asyncio.Future):
            self._awaited.cancel()
        return self._run(self._step.throw, error)

    async def rest(self) -> bytes | None:
        """Wait with the generator until its step is over: its frame, or None if it ended."""
        step = self._step
        assert step is not None
        while self.waiting:
            try:
                await _Settled(self._awaited)  # what the generator awaits, without taking its result
            except BaseException as error:
                frame = self.throw(error)
                if not self.waiting:
                    return frame
                continue
            self.waiting = False
        try:
            return await step  # the rest of the step, resumed as any await resumes it
        except StopAsyncIteration:
            self.ended = True
            return None
        except BaseException:
            self.ended = True
            raise

    def _run(self, resume: Callable[[Any], Any], value: Any) -> bytes | None:
        try:
            self._awaited = resume(value)
        except StopIteration as made:
            self.waiting = False
            frame: bytes = made.value
            return frame
        except StopAsyncIteration:
            self.waiting = False
            self.ended = True
            return None
        except BaseException:
            self.waiting = False
            self.ended = True
            raise
        self.waiting = True
        return None


class _Settled:
    """Awaits what a suspended coroutine gave up (a future, or None for a bare yield) until it is done.

    The future's result is left for the coroutine, which takes it when resumed.
    """

    __slots__ = ("_awaited",)

    def __init__(self, awaited: Any) -> None:
        self._awaited = awaited

    def __await__(self) -> Generator[Any, None, None]:
        awaited = self._awaited
        if awaited is None or not awaited.done():
            if awaited is not None:
                awaited._asyncio_future_blocking = True
            yield awaited

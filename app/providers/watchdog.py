"""The ``first_token`` and ``idle`` deadlines of one model call, kept by one lazily re-armed timer."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any, Protocol

import httpx

from chatgate.errors import ProviderError

__all__ = ["Deadlines", "Watchdog"]


class Deadlines(Protocol):
    """What the watchdog needs of an upstream: its name and its two deadlines, in seconds."""

    @property
    def name(self) -> str:
        """The upstream's name, for the error."""
        ...

    @property
    def first_token_timeout(self) -> float:
        """From sending the request to the first event."""
        ...

    @property
    def idle_timeout(self) -> float:
        """Between two reads once streaming."""
        ...


class Watchdog:
    """Cancels the streaming task when one wait for the upstream passes its deadline.

    ``reads`` sets the deadline before each read and clears ``_waiting`` after it; the timer checks
    lazily, so it re-arms only when it fires early. A cancellation is only ever delivered while the
    task waits on the upstream, so it always lands inside ``guard`` or ``reads``, which turn it back
    into a ``ProviderError`` (and ``uncancel`` the task) when it was ours.
    """

    __slots__ = ("_deadline", "_expired", "_handle", "_loop", "_streaming", "_task", "_upstream", "_waiting")

    def __init__(self, upstream: Deadlines) -> None:
        self._upstream = upstream
        self._loop = asyncio.get_running_loop()
        task = asyncio.current_task()
        assert task is not None
        self._task = task
        self._handle: asyncio.TimerHandle | None = None
        self._deadline = 0.0
        self._waiting = False
        self._streaming = False
        self._expired = False

    def begin_attempt(self) -> None:
        """The first-token deadline starts now: sending, the response's headers and first event."""
        self._task = asyncio.current_task() or self._task
        self._set(self._loop.time() + self._upstream.first_token_timeout)

    def started(self) -> None:
        """The first event arrived: from now on each read gets ``idle`` seconds."""
        self._streaming = True

    def pause(self) -> None:
        """We are not waiting for the upstream (between attempts)."""
        self._waiting = False

    async def guard(self, waiting: Any) -> Any:
        """Await ``waiting`` (a wait on the upstream), turning our own cancellation into ProviderError."""
        try:
            return await waiting
        except asyncio.CancelledError:
            if self._expired:
                raise self._timeout() from None
            raise

    async def reads(self, response: httpx.Response) -> AsyncIterator[bytes]:
        """The response body's chunks, each read under the current deadline."""
        self._task = asyncio.current_task() or self._task
        # An uncompressed body is read straight from the transport's stream: httpx's own iterators
        # (decoding, re-chunking, byte counting) cost three generator hops per read and do nothing here.
        encoded = response.headers.get("content-encoding", "identity") != "identity"
        chunks = response.aiter_bytes() if encoded else aiter(response.stream)  # type: ignore[arg-type]
        loop = self._loop
        idle = self._upstream.idle_timeout
        while True:
            self._set(loop.time() + idle if self._streaming else self._deadline)
            try:
                chunk = await anext(chunks)
            except StopAsyncIteration:
                return
            except asyncio.CancelledError:
                if self._expired:
                    raise self._timeout() from None
                raise
            finally:
                self._waiting = False
            yield chunk

    def close(self) -> None:
        """Stop the timer."""
        self._waiting = False
        if self._handle is not None:
            self._handle.cancel()
            self._handle = None

    def _set(self, deadline: float) -> None:
        self._deadline = deadline
        self._waiting = True
        if self._handle is None or self._handle.when() > deadline:
            if self._handle is not None:
                self._handle.cancel()
            self._handle = self._loop.call_at(deadline, self._check)

    def _check(self) -> None:
        self._handle = None
        if not self._waiting:
            return  # the next read arms the timer again
        if self._loop.time() < self._deadline:
            self._handle = self._loop.call_at(self._deadline, self._check)
            return
        self._expired = True
        self._task.cancel()

    def _timeout(self) -> ProviderError:
        """The watchdog cancelled the task: take the cancellation back and say which deadline passed."""
        self._expired = False
        self._task.uncancel()
        which = "idle" if self._streaming else "first_token"
        limit = self._upstream.idle_timeout if self._streaming else self._upstream.first_token_timeout
        return ProviderError(
            f"{self._upstream.name}: no answer within the {which} timeout ({limit:g}s)",
            public_message="The model took too long to respond.",
            kind="timeout",
        )

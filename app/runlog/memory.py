"""The run log of one process: frames in a bounded list per run, followers woken directly."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

from chatgate.runlog.base import ReplayUnavailable, RunEnding, RunLogLimits

__all__ = ["MemoryRunLog", "MemoryRunWriter"]


class MemoryRunWriter:
    """One run's frames. ``first`` is the index of ``frames[0]`` once old frames have been dropped."""

    keeps_journal = False

    def __init__(self, run_id: str, limits: RunLogLimits) -> None:
        self.run_id = run_id
        self.frames: list[bytes] = []
        self.first = 0
        self.ending: RunEnding | None = None
        self._size = 0
        self._max_bytes = limits.max_bytes
        self._wake = asyncio.Event()
        self._stop = asyncio.Event()

    def write(self, frame: bytes) -> None:
        """Append a frame and wake the followers; past ``max_bytes`` the oldest half is dropped."""
        self.frames.append(frame)
        self._size += len(frame)
        if self._size > self._max_bytes and len(self.frames) > 1:
            drop = len(self.frames) // 2
            self._size -= sum(map(len, self.frames[:drop]))
            del self.frames[:drop]
            self.first += drop
        self._wake.set()

    def journal(self, record: bytes) -> None:
        """Nothing: a process that dies takes its runs with it, there is no one to recover them."""

    async def close(self, ending: RunEnding, *, hold: bool = False) -> None:
        """Mark the run ended; followers drain what is left and return (``hold`` means nothing here)."""
        self.ending = ending
        self._wake.set()

    async def release(self) -> None:
        """Nothing: a memory log holds no lease."""

    async def stop_requested(self) -> None:
        """Return once ``request_stop`` was called for this run."""
        await self._stop.wait()

    def request_stop(self) -> bool:
        """Ask the run to stop; False if it has already ended."""
        if self.ending is not None:
            return False
        self._stop.set()
        return True

    async def follow(self) -> AsyncIterator[bytes]:
        """Frames from the start, then live; what piled up while a follower was away comes as one chunk."""
        if self.first:
            raise ReplayUnavailable(f"run {self.run_id} is longer than the run log keeps")
        index = 0
        while True:
            if index < self.first:
                raise ReplayUnavailable(f"a follower of run {self.run_id} fell behind what the run log keeps")
            pending = len(self.frames) - (index - self.first)
            if pending:
                start = index - self.first
                yield self.frames[start] if pending == 1 else b"".join(self.frames[start:])
                index += pending
                continue
            if self.ending is not None:
                return
            self._wake.clear()
            await self._wake.wait()


class MemoryRunLog:
    """Run logs held by this process; a finished run's log is dropped after ``limits.ttl``."""

    def __init__(self, limits: RunLogLimits | None = None) -> None:
        self.limits = limits or RunLogLimits()
        self._runs: dict[str, MemoryRunWriter] = {}
        self._expiries: dict[str, asyncio.TimerHandle] = {}

    async def create(self, run_id: str) -> MemoryRunWriter:
        """Open the log of a new run."""
        writer = _ClosingWriter(run_id, self.limits, self)
        self._runs[run_id] = writer
        return writer

    def local(self, run_id: str) -> MemoryRunWriter | None:
        """The run's log if this process holds it."""
        return self._runs.get(run_id)

    def follow(self, run_id: str) -> AsyncIterator[bytes]:
        """See ``RunLog.follow``."""
        writer = self._runs.get(run_id)
        if writer is None:
            raise ReplayUnavailable(f"no run log for run {run_id}")
        return writer.follow()

    async def request_stop(self, run_id: str) -> bool:
        """See ``RunLog.request_stop``."""
        writer = self._runs.get(run_id)
        return writer is not None and writer.request_stop()

    async def lost_journal(self, run_id: str) -> list[bytes] | None:
        """Always None: one process keeps no journal (see ``RunLog.lost_journal``)."""
        return None

    def _ended(self, run_id: str) -> None:
        loop = asyncio.get_running_loop()
        self._expiries[run_id] = loop.call_later(self.limits.ttl, self._expire, run_id)

    def _expire(self, run_id: str) -> None:
        self._runs.pop(run_id, None)
        self._expiries.pop(run_id, None)

    async def aclose(self) -> None:
        """Drop every log."""
        for handle in self._expiries.values():
            handle.cancel()
        self._expiries.clear()
        self._runs.clear()


class _ClosingWriter(MemoryRunWriter):
    def __init__(self, run_id: str, limits: RunLogLimits, log: MemoryRunLog) -> None:
        super().__init__(run_id, limits)
        self._log = log

    async def close(self, ending: RunEnding, *, hold: bool = False) -> None:
        await super().close(ending)
        self._log._ended(self.run_id)

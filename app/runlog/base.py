"""The run log interface: a writer for the run that produces frames, followers for everyone else."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Literal, Protocol, TypeAlias

from chatgate.errors import ChatgateError

__all__ = [
    "ProducerLost",
    "ReplayUnavailable",
    "RunEnding",
    "RunLog",
    "RunLogLimits",
    "RunLogUnavailable",
    "RunWriter",
]

RunEnding: TypeAlias = Literal["finished", "stopped", "failed"]
"""How a run's log was closed by its producer (the frames already hold the protocol's own ending)."""


@dataclass(frozen=True, slots=True)
class RunLogLimits:
    """Bounds on what a run log keeps: see docs/deployment.md."""

    max_bytes: int = 4 * 1024 * 1024
    """In memory: frames kept per run for replay; the oldest are dropped past this."""
    max_entries: int = 10_000
    """In Redis: stream entries (batches of frames) kept per run."""
    ttl: float = 60.0
    """Seconds a finished run's log is kept for late followers."""
    flush_interval: float = 0.05
    """Redis: how long frames wait to be written together (one write per process per interval)."""
    lease: float = 3.0
    """Redis: seconds a producer's lease lasts unless renewed; followers give up on it after this."""


class ProducerLost(ChatgateError):
    """The run's producer stopped without an ending (its process died): end the stream as failed."""


class RunLogUnavailable(ProducerLost):
    """The run log itself cannot be reached (Redis down): the follower cannot tell how the run goes on."""


class ReplayUnavailable(ChatgateError):
    """The run's log no longer holds its start (too long, or expired): it cannot be replayed."""


class RunWriter(Protocol):
    """The producing side of one run's log."""

    run_id: str
    keeps_journal: bool
    """Whether ``journal`` keeps anything (a Redis log); the producer encodes no journal otherwise."""

    def write(self, frame: bytes) -> None:
        """Append one encoded frame; cheap and synchronous (batched for remote logs)."""
        ...

    def journal(self, record: bytes) -> None:
        """Append one line of the run's journal (app/threads/journal.py), batched with the frames after it."""
        ...

    async def close(self, ending: RunEnding, *, hold: bool = False) -> None:
        """Flush, mark the log ended, and let it expire after the TTL.

        ``hold``: the run's turn is not saved yet (the store is down); the lease stays renewed until
        ``release``, so nobody else recovers a run whose producer is still saving it.
        """
        ...

    async def release(self) -> None:
        """Drop a held lease (after ``close(hold=True)``): the turn is saved."""
        ...

    async def stop_requested(self) -> None:
        """Return when someone asked this run to stop (on any replica)."""
        ...


class RunLog(Protocol):
    """Where detached runs write their streams."""

    async def create(self, run_id: str) -> RunWriter:
        """Open the log of a new run, owned by this process."""
        ...

    def follow(self, run_id: str) -> AsyncIterator[bytes]:
        """The run's frames from its start, then live, until its ending.

        Raises ``ReplayUnavailable`` (before any frame) when the log is unknown or lost its start, and
        ``ProducerLost`` when the producer dies before closing the log.
        """
        ...

    async def request_stop(self, run_id: str) -> bool:
        """Ask the run to stop; False when no such run is running."""
        ...

    async def lost_journal(self, run_id: str) -> list[bytes] | None:
        """The journal of a run whose producer died (its lease lapsed), or None.

        None: the producer is alive, the log is unknown or lost its start, or the log keeps no journal
        (in memory, one process: nothing outlives it). Raises ``RunLogUnavailable`` when it cannot tell.
        """
        ...

    async def aclose(self) -> None:
        """Release what the log holds (tasks, connections)."""
        ...

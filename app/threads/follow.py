"""Following a run through its run log: the stream a request sends, and how it ends when it cannot go on.

Every request on a stored thread's run follows its log (app/runlog/): the request that started it, a
useChat resume, an AG-UI reconnect, on this replica or another. The frames are the protocol's own,
ending included; a follower adds an ending only when the log cannot give one: the producer died
(``ProducerLost``), the follower fell behind what the log keeps (``ReplayUnavailable``) or the run log
cannot be reached (``RunLogUnavailable``, Redis down). A follower that finds the producer dead first
saves the run's turn from the log (``lost``, app/threads/recovery.py), so its client's reload shows every
word the stream gave it.

A run's log is named after the store's run id and the protocol that encodes it (``run_log_id``), so a
useChat resume never replays an AG-UI run's frames, nor the reverse.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable

from chatgate.runlog import ProducerLost, ReplayUnavailable, RunLog, RunLogUnavailable

__all__ = ["Ending", "Lost", "follow_run", "replay_run", "run_log_id"]

logger = logging.getLogger("chatgate.run_follow")

Ending = Callable[[str, str], bytes]
"""``UIProtocol.interrupted`` for one agent: the error ending for ``(message, code)``."""

Lost = Callable[[], Awaitable[object]]
"""What a follower does on finding the producer dead, before ending its stream: recover the run."""

LOST = ("The run was interrupted: the server producing it stopped. What was said so far is saved.", "producer_lost")
BEHIND = ("This stream fell behind what the server keeps of the run; reload the conversation.", "replay_unavailable")
UNREACHABLE = ("The run log cannot be reached; reload the conversation in a moment.", "run_log_unavailable")


def run_log_id(run_id: str, protocol: str) -> str:
    """The run log of the store's run ``run_id``, encoded in ``protocol``."""
    return f"{run_id}.{protocol}"


async def follow_run(
    frames: AsyncIterator[bytes], ending: Ending, first: bytes = b"", lost: Lost | None = None
) -> AsyncGenerator[bytes, None]:
    """``first`` (already read) and then ``frames``, with an error ending if the log cannot finish them.

    ``lost`` runs when the producer is found dead, before the ending: the run's turn is saved by then.
    """
    try:
        if first:
            yield first
        async for frame in frames:
            yield frame
    except RunLogUnavailable:
        yield ending(*UNREACHABLE)
    except ProducerLost:
        if lost is not None:
            try:
                await lost()
            except Exception:  # the sweep or the next request recovers it; this stream still ends
                logger.exception("recovering a run whose producer died failed")
        yield ending(*LOST)
    except ReplayUnavailable:
        yield ending(*BEHIND)
    finally:
        aclose = getattr(frames, "aclose", None)
        if aclose is not None:
            await aclose()


async def replay_run(
    run_log: RunLog, log_id: str, ending: Ending, rejoined: bytes = b"", lost: Lost | None = None, seen: int = 0
) -> AsyncGenerator[bytes, None] | None:
    """The run's stream from its start, then live; None when there is nothing to replay.

    ``rejoined`` (``UIProtocol.rejoined``) goes right after the run's first frame; ``lost`` as ``follow_run``.
    ``seen`` leaves out the run's first ``seen`` events (a client's cursor), and then ``rejoined`` too.

    The first frame is read here, so a run that is unknown, expired, too long to replay or whose
    producer died before saying anything is None: the caller answers 204 or falls back.
    """
    try:
        frames = run_log.follow(log_id)
    except ReplayUnavailable:
        return None
    try:
        first = await anext(aiter(frames))
    except (ReplayUnavailable, ProducerLost, StopAsyncIteration) as exc:
        with contextlib.suppress(Exception):
            aclose = getattr(frames, "aclose", None)
            if aclose is not None:
                await aclose()
        if lost is not None and isinstance(exc, ProducerLost) and not isinstance(exc, RunLogUnavailable):
            with contextlib.suppress(Exception):
                await lost()
        return None
    if seen:
        return follow_run(_after(first, frames, seen), ending, b"", lost)
    if rejoined:
        head, separator, rest = first.partition(b"\n\n")  # frames are LF-only, one data line each
        first = head + separator + rejoined + rest
    return follow_run(frames, ending, first, lost)


async def _after(first: bytes, frames: AsyncIterator[bytes], seen: int) -> AsyncGenerator[bytes, None]:
    """``first`` and then ``frames`` without their first ``seen`` events (each ends with a blank line)."""
    try:
        frame: bytes | None = first
        while frame is not None:
            events = frame.count(b"\n\n")
            if seen >= events:
                seen -= events
            else:
                yield frame if seen == 0 else frame.split(b"\n\n", seen)[seen]
                seen = 0
            frame = await anext(frames, None)
    finally:
        aclose = getattr(frames, "aclose", None)
        if aclose is not None:
            await aclose()

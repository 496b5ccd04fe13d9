"""Recovering a run whose producer died: its turn rebuilt from the run log's journal, saved once.

A replica killed mid-run (kill -9, a lost machine) leaves its thread held by a run nobody drives, and
the words its followers already received in the run log only. Whoever finds such a run — a follower
whose stream met the lapsed lease, the next request on the thread, a reset or system-message change,
or the periodic sweep — calls ``RunRecovery.recover``: when the run's lease has lapsed, its journal
(app/threads/journal.py) is folded through a ``TurnRecorder`` exactly as the producer folded its events,
and ``ThreadStore.finish_run`` saves that turn and frees the thread. ``finish_run`` is conditional on
the run still holding the thread, so of several replicas recovering one run exactly one writes it.

The turn is ``partial`` unless the journal holds the run's own ending (a producer that died while the
store refused its finished turn leaves a ``complete`` one). With the memory run log nothing outlives
the process, so nothing is recovered: its last checkpoint stays, and the thread is freed after
``STALE_RUN_SECONDS``.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Sequence

from chatgate.events import RunFailed, RunFinished
from chatgate.history import Message
from chatgate.runlog import RunLog, RunLogUnavailable
from chatgate.store import MessageStatus, ThreadInfo, ThreadStore
from chatgate.threads.follow import run_log_id
from chatgate.threads.journal import decode_record
from chatgate.threads.run import CHECKPOINT_SECONDS, TurnRecorder

__all__ = ["SWEEP_SECONDS", "RunRecovery", "fold_journal", "sweep_dead_runs", "sweep_once"]

logger = logging.getLogger("chatgate.run_recovery")

SWEEP_SECONDS = 5.0
"""How often each process looks for dead runs nobody asked about (a thread left alone after a crash)."""


def fold_journal(lines: Sequence[bytes]) -> tuple[list[Message], MessageStatus]:
    """The turn a run's journal describes, and the status its producer would have saved it with."""
    recorder = TurnRecorder(None)
    status: MessageStatus = "partial"
    for line in lines:
        record = decode_record(line)
        if isinstance(record, str):
            recorder = TurnRecorder(record or None)
        elif isinstance(record, RunFinished):
            status = "partial" if record.stopped else "complete"
        elif isinstance(record, RunFailed):
            status = "partial" if record.interrupted or record.code == "server_shutdown" else "error"
        if record is not None and not isinstance(record, str):
            recorder.feed(record)
    return recorder.turn(), status


class RunRecovery:
    """Finds whether a thread's run is dead and, if so, saves its turn from the journal and frees the thread."""

    def __init__(self, store: ThreadStore, run_log: RunLog, protocols: Sequence[str]) -> None:
        self._store = store
        self._run_log = run_log
        self._protocols = tuple(protocols)
        self.recovered = 0
        """Runs this process saved from a journal (the tests count them)."""

    async def recover(self, thread: ThreadInfo) -> bool:
        """True when ``thread``'s run was dead and is now saved (here or on another replica) and released.

        False when the run is alive, its log keeps no journal or lost its start, or the run log cannot be
        reached: the thread then waits for its run, or for ``STALE_RUN_SECONDS``.
        """
        run_id = thread.active_run
        if run_id is None:
            return False
        for protocol in self._protocols:
            try:
                lines = await self._run_log.lost_journal(run_log_id(run_id, protocol))
            except RunLogUnavailable as exc:
                logger.warning("run %s: cannot tell whether its producer is alive: %s", run_id, exc)
                return False
            if lines is not None:
                break
        else:
            return False
        turn, status = fold_journal(lines)
        if await self._store.finish_run(thread, run_id, turn, status):
            self.recovered += 1
            logger.warning(
                "run %s: its producer died; its turn (%d messages, %s) is saved from the run log",
                run_id,
                len(turn),
                status,
            )
        return True


async def sweep_once(store: ThreadStore, recovery: RunRecovery, stalled_for: float = 2 * CHECKPOINT_SECONDS) -> int:
    """Recover every dead run among those whose heartbeat is ``stalled_for`` old; how many were freed.

    A live run refreshes its heartbeat every ``CHECKPOINT_SECONDS``, so only runs that missed two are
    asked about (one run log round trip or three each).
    """
    freed = 0
    for thread in await store.stalled_runs(time.time() - stalled_for):
        freed += await recovery.recover(thread)
    return freed


async def sweep_dead_runs(store: ThreadStore, recovery: RunRecovery) -> None:
    """Every ``SWEEP_SECONDS``, recover the dead runs of threads nobody touched since their producer died."""
    while True:
        await asyncio.sleep(SWEEP_SECONDS)
        try:
            await sweep_once(store, recovery)
        except Exception:
            logger.exception("sweeping dead runs failed")

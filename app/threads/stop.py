"""Stopping a stored thread's running run, on whichever replica produces it, and waiting for its end.

``POST .../threads/{id}/stop`` asks the run to stop; ``DELETE .../threads/{id}`` stops it the same way
and waits (a bounded while) for it to end before the thread goes, so the model is not called on for a
thread that no longer exists. A run that ends after its thread is gone writes nothing: saving a turn
checks the run still holds the thread.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Iterable

from chatgate.runlog import RunLog
from chatgate.store import ThreadInfo, ThreadStore
from chatgate.threads.follow import run_log_id
from chatgate.threads.run import ThreadRun

__all__ = ["STOP_WAIT_SECONDS", "request_stop", "stop_and_wait"]

STOP_WAIT_SECONDS = 5.0
"""How long a delete waits for a stopped run to end before deleting its thread anyway."""

_POLL_SECONDS = 0.05


async def request_stop(run_log: RunLog, thread: ThreadInfo, protocols: Iterable[str]) -> bool:
    """Ask ``thread``'s running run to stop, in whichever protocol it streams; whether one was running."""
    if thread.active_run is None:
        return False
    stopped = False
    for name in protocols:
        stopped = await run_log.request_stop(run_log_id(thread.active_run, name)) or stopped
    return stopped


async def stop_and_wait(
    store: ThreadStore, run_log: RunLog, runs: Iterable[ThreadRun], thread: ThreadInfo, protocols: Iterable[str]
) -> None:
    """Stop ``thread``'s running run and wait, at most ``STOP_WAIT_SECONDS``, until it has ended."""
    if not await request_stop(run_log, thread, protocols):
        return
    local = [run.task for run in runs if run.thread.key == thread.key and run.run_id == thread.active_run]
    if local:  # this process runs it: wait for its task (it never raises out of ``wait``)
        await asyncio.wait(local, timeout=STOP_WAIT_SECONDS)
        return
    # Another replica runs it: its end releases the thread in the store.
    with contextlib.suppress(TimeoutError):
        async with asyncio.timeout(STOP_WAIT_SECONDS):
            while True:
                current = await store.get_thread(thread.owner, thread.agent, thread.id)
                if current is None or current.active_run != thread.active_run:
                    return
                await asyncio.sleep(_POLL_SECONDS)

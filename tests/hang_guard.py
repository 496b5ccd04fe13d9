"""The last resort against a test that pytest-timeout cannot end: print every thread's stack, then end the worker.

pytest-timeout (``timeout`` in pyproject.toml, or a test's ``timeout`` mark) raises in the test's main
thread. That cannot end a test stuck where the raise never lands (in C code holding the interpreter, or in
a teardown that hangs again after the raise), and one such test stalled a whole CI run until its time
limit, with nothing printed. This guard gives each test its pytest-timeout plus ``GRACE_SECONDS``; past
that it prints the stack of every thread, stops what the test process started (by PID), and exits the
process. Under xdist that is a crashed worker: the test fails with its stacks in the log, a new worker takes
its place, and the run goes on to its summary. A C-level ``faulthandler`` timer backs up the Python one, for a
main thread that never lets the Python one run.
"""

from __future__ import annotations

import faulthandler
import os
import sys
import threading
from typing import TextIO

import pytest

from tests.processes import descendants, kill_all

__all__ = ["GRACE_SECONDS", "HangGuard", "guard_seconds"]

GRACE_SECONDS = float(os.environ.get("CHATGATE_TEST_HANG_GRACE", "120"))
"""How long past its pytest-timeout a test may go on (its teardown after the raise) before the guard ends it;
``CHATGATE_TEST_HANG_GRACE`` sets it (tests/test_hang_guard.py)."""

_BACKUP_SECONDS = 60.0
"""How long after the Python guard the C-level one ends the process, should the Python one not run."""


def guard_seconds(item: pytest.Item) -> float:
    """The test's pytest-timeout (its mark, else the configured one) plus ``GRACE_SECONDS``."""
    mark = item.get_closest_marker("timeout")
    timeout = float(mark.args[0]) if mark and mark.args else float(item.config.getini("timeout") or 0)
    return timeout + GRACE_SECONDS


class HangGuard:
    """Arms a timer around each test; a test that outlives it ends the process (see the module's docstring)."""

    def __init__(self) -> None:
        # A copy of the real stderr, taken before pytest captures it, so the stacks reach the run's log.
        self._out: TextIO = os.fdopen(os.dup(sys.__stderr__.fileno() if sys.__stderr__ else 2), "w")
        self._timer: threading.Timer | None = None

    def arm(self, item: pytest.Item) -> None:
        """Start the timers for ``item``."""
        seconds = guard_seconds(item)
        self._timer = threading.Timer(seconds, self._end_hung, args=(item.nodeid, seconds))
        self._timer.daemon = True
        self._timer.start()
        faulthandler.dump_traceback_later(seconds + _BACKUP_SECONDS, exit=True, file=self._out)

    def disarm(self) -> None:
        """Stop the timers: the test ended."""
        faulthandler.cancel_dump_traceback_later()
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def close(self) -> None:
        """Stop the timers and close the copy of stderr: the session is over."""
        self.disarm()
        self._out.close()

    def _end_hung(self, nodeid: str, seconds: float) -> None:
        try:
            self._out.write(f"\nhang guard: {nodeid} still running after {seconds:.0f} s; its stacks:\n")
            self._out.flush()
            faulthandler.dump_traceback(file=self._out, all_threads=True)
            left = descendants(os.getpid())
            self._out.write(f"hang guard: stopping {len(left)} process(es) it started, then this worker\n")
            self._out.flush()
            kill_all(left)
        finally:
            os._exit(1)

"""The processes the tests start, and stopping them with everything they started, by PID (Linux ``/proc``).

A server a test starts may start its own children (``chatgate serve --workers N`` its workers, ``runuser``
PostgreSQL, ``serve.sh`` llama-server and chatgate), and those may leave its process group, so a process
is stopped with the descendants it had when it was asked to stop. The test process adopts orphans
(``adopt_orphans``): a worker whose supervisor died becomes its child instead of init's, so the
session-end check in tests/conftest.py sees it.
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import os
import signal
import subprocess
import time
from pathlib import Path

__all__ = [
    "adopt_orphans",
    "children",
    "command_line",
    "descendants",
    "kill_all",
    "kill_tree",
    "reap",
    "running",
    "stop_process",
    "wait_gone",
]

_PR_SET_CHILD_SUBREAPER = 36  # <linux/prctl.h>

STOP_SECONDS = 10.0
"""How long a stopped process gets to exit on SIGTERM before it, and what it started, get SIGKILL."""


def adopt_orphans() -> None:
    """Make this process the reaper of its descendants' orphans (``PR_SET_CHILD_SUBREAPER``)."""
    libc = ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)
    if libc.prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_CHILD_SUBREAPER)")


def reap(pids: list[int]) -> None:
    """Collect the exit status of those of ``pids`` that are adopted orphans (no ``Popen`` waits for them)."""
    for pid in pids:
        with contextlib.suppress(ChildProcessError):
            os.waitpid(pid, os.WNOHANG)


def children(pid: int) -> list[int]:
    """The children of process ``pid``, whichever of its threads started them; [] once it has gone."""
    found: list[int] = []
    with contextlib.suppress(FileNotFoundError, ProcessLookupError):
        for task in Path(f"/proc/{pid}/task").iterdir():
            with contextlib.suppress(FileNotFoundError, ProcessLookupError):
                found += [int(child) for child in (task / "children").read_text().split()]
    return found


def descendants(pid: int) -> list[int]:
    """Every process below ``pid``: its children, theirs, and so on (parents before their children)."""
    found = children(pid)
    for child in list(found):
        found += descendants(child)
    return found


def running(pid: int) -> bool:
    """Whether ``pid`` is a process that still runs (a zombie has stopped: only its exit status is left)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except (FileNotFoundError, ProcessLookupError):
        return False
    return stat.rsplit(")", 1)[1].split()[0] not in ("Z", "X")


def command_line(pid: int) -> str:
    """What ``pid`` runs, for a report."""
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace").strip()
    except (FileNotFoundError, ProcessLookupError):
        return "?"


def wait_gone(pids: list[int], timeout: float) -> list[int]:
    """Wait up to ``timeout`` seconds for every one of ``pids`` to stop; returns those still running."""
    deadline = time.monotonic() + timeout
    left = [pid for pid in pids if running(pid)]
    while left and time.monotonic() < deadline:
        time.sleep(0.05)
        left = [pid for pid in left if running(pid)]
    return left


def stop_process(process: subprocess.Popen[bytes] | subprocess.Popen[str], timeout: float = STOP_SECONDS) -> None:
    """SIGTERM ``process`` and wait for it; SIGKILL it after ``timeout`` seconds, and then whatever it started
    that is still running (a grandchild it did not stop, a worker that left its process group)."""
    below = descendants(process.pid)
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
    kill_all(wait_gone(below, timeout))


def kill_tree(process: subprocess.Popen[bytes] | subprocess.Popen[str]) -> None:
    """SIGKILL ``process`` and everything it started, at once (a test is over: nothing of it need finish)."""
    below = descendants(process.pid)
    process.kill()
    process.wait()
    kill_all(below)


def kill_all(pids: list[int]) -> None:
    """SIGKILL each of ``pids`` that still runs, and wait for it to be gone."""
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    left = wait_gone(pids, STOP_SECONDS)
    reap(pids)
    assert not left, f"processes survived SIGKILL: {left}"

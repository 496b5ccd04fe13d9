"""A worker's lifeline to its supervisor: no worker outlives the ``chatgate serve --workers N`` parent.

When the parent goes, however it goes (SIGKILL, a crash, an OOM kill), each worker gets SIGTERM, drains
as on any SIGTERM and exits.

On Linux the kernel sends the signal (``prctl(PR_SET_PDEATHSIG)``, set in the worker right after the
fork). The kernel ties it to the parent's *thread* that forked, not to the process: the supervisor
forks every worker from its main thread, which lives as long as it does. Elsewhere, a daemon thread
in the worker checks once a second whether its parent has changed (an orphan is adopted by init or a
subreaper) and sends the signal itself.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import signal
import sys
import threading
import time

__all__ = ["die_with_parent"]

_PR_SET_PDEATHSIG = 1  # <linux/prctl.h>
_CHECK_SECONDS = 1.0


def die_with_parent(parent: int) -> None:
    """SIGTERM this process once process ``parent`` (the supervisor that forked it) has gone."""
    if not (sys.platform == "linux" and _set_parent_death_signal(signal.SIGTERM)):
        threading.Thread(target=_watch_parent, args=(parent,), name="chatgate-lifeline", daemon=True).start()
        return
    if os.getppid() != parent:  # the parent died before the signal was armed: nothing will send it
        os.kill(os.getpid(), signal.SIGTERM)


def _set_parent_death_signal(signum: int) -> bool:
    """Ask the kernel for ``signum`` when the parent dies; False when that cannot be done."""
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)
        return int(libc.prctl(_PR_SET_PDEATHSIG, int(signum), 0, 0, 0)) == 0
    except (OSError, AttributeError):
        return False


def _watch_parent(parent: int) -> None:
    while os.getppid() == parent:
        time.sleep(_CHECK_SECONDS)
    os.kill(os.getpid(), signal.SIGTERM)

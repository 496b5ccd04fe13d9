"""Runs that must still be going when a client comes back, sized from how slow the machine is now.

A test that drops a stream and reconnects with a Node client needs the run to outlast the client's start,
which takes 0.5 s on an idle machine and several seconds on a loaded one. Rather than one fixed length,
such a test times a quick request of the same client first and sends a text whose echo lasts ``OUTLAST``
times that (``builtin:echo`` answers word by word at its ``delay``).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable

__all__ = ["OUTLAST", "seconds_of", "words_lasting"]

OUTLAST = 4
"""How many times a timed client request a run must last."""
MIN_WORDS = 24


def seconds_of(call: Callable[[], object]) -> float:
    """How long ``call`` took, in seconds."""
    started = time.monotonic()
    call()
    return time.monotonic() - started


def words_lasting(seconds: float, delay: float) -> str:
    """``word0 word1 …``: at least ``MIN_WORDS`` words, and enough that echoing them at ``delay`` takes ``seconds``."""
    return " ".join(f"word{n}" for n in range(max(MIN_WORDS, math.ceil(seconds / delay))))

"""Garbage-collector settings for a long-running server process.

CPython's cyclic collector runs a full collection, which walks every live object, each time enough
younger collections have happened and the heap grew by a quarter. A server opening thousands of
streams grows its heap the whole time, so full collections came back again and again over a heap that
grows with the streams: about 30% of the CPU spent opening 5,000 relayed streams (docs/performance.md).
``tune_for_serving`` leaves young collections as they are and makes full ones a hundred times rarer,
and it freezes what startup built (modules, the app, its config), which no collection needs to walk.
Reference counting still frees almost everything at once; only cyclic garbage waits longer.
"""

from __future__ import annotations

import gc

__all__ = ["FULL_COLLECTION_EVERY", "tune_for_serving"]

FULL_COLLECTION_EVERY = 1000
"""Middle-generation collections between two full ones (CPython's default is 10)."""


def tune_for_serving() -> None:
    """Freeze the objects built so far and make full collections rarer. Call once, right before serving."""
    gc.collect()
    gc.freeze()
    young, middle, _ = gc.get_threshold()
    gc.set_threshold(young, middle, FULL_COLLECTION_EVERY)

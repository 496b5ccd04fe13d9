"""What ``chatgate serve`` sets process-wide before serving: the garbage collector and the open-file limit.

**The collector.** CPython's cyclic collector runs a full collection, which walks every live object,
each time enough younger collections have happened and the heap grew by a quarter. A server opening
thousands of streams grows its heap the whole time, so full collections came back again and again over
a heap that grows with the streams: about 30% of the CPU spent opening 5,000 relayed streams
(docs/performance.md). Young collections stay as they are; full ones become a hundred times rarer,
and what startup built (modules, the app, its config), which no collection needs to walk, is frozen.
Reference counting still frees almost everything at once; only cyclic garbage waits longer.

**Open files.** Every stream holds a socket to its client, and a relayed one a second to the
upstream: 10,000 relayed streams need 20,000 descriptors, more than the usual soft limit of 1,024. The
soft limit is raised to the hard limit, which only the operator (``ulimit -Hn``, systemd's
``LimitNOFILE``, Docker's ``--ulimit nofile``) can raise.
"""

from __future__ import annotations

import gc
import resource

__all__ = ["FULL_COLLECTION_EVERY", "prepare_for_serving"]

FULL_COLLECTION_EVERY = 1000
"""Middle-generation collections between two full ones (CPython's default is 10)."""


def prepare_for_serving() -> None:
    """Tune the collector and raise the open-file limit. Call once, right before serving."""
    gc.collect()
    gc.freeze()
    young, middle, _ = gc.get_threshold()
    gc.set_threshold(young, middle, FULL_COLLECTION_EVERY)
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft != hard:
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))

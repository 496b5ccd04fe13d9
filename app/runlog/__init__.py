"""Run logs: where a detached run writes its stream, so any number of followers can read it.

A run on a stored thread is detached from the request that started it. Its encoded stream frames go
into a run log; the request that started it, a resume after a dropped connection, and a follower on
another replica all read the same log: replayed from the start, then live, until the run's ending.

- ``MemoryRunLog`` (``memory.py``): one process. Followers are woken directly; nothing is copied.
- ``RedisRunLog`` (``redis.py``): several replicas, with ``[server] redis_url``. Frames are batched
  into Redis Stream entries (never one round trip per token); a lease key names the producing
  replica and is renewed while it runs, so followers learn of a producer that died. Beside the frames
  it keeps the run's journal (app/threads/journal.py), from which a dead producer's turn is recovered.

Both are bounded: a run keeps at most ``max_bytes`` of frames (memory) or ``max_entries`` batches
(Redis) for replay, and a finished run's log is dropped ``ttl`` seconds after its ending. ``app_run_log``
(``setup.py``) opens the one the config sets.
"""

from chatgate.runlog.base import (
    ProducerLost,
    ReplayUnavailable,
    RunEnding,
    RunLog,
    RunLogLimits,
    RunLogUnavailable,
    RunWriter,
)
from chatgate.runlog.memory import MemoryRunLog
from chatgate.runlog.redis import RedisRunLog
from chatgate.runlog.setup import app_run_log

__all__ = [
    "MemoryRunLog",
    "ProducerLost",
    "RedisRunLog",
    "ReplayUnavailable",
    "RunEnding",
    "RunLog",
    "RunLogLimits",
    "RunLogUnavailable",
    "RunWriter",
    "app_run_log",
]

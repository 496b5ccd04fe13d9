"""The app's run log, as the config sets it: in memory for one process, or in Redis for every replica."""

from __future__ import annotations

import redis.asyncio as redis

from chatgate.config import ServerSettings
from chatgate.runlog.base import RunLog, RunLogLimits
from chatgate.runlog.memory import MemoryRunLog
from chatgate.runlog.redis import RedisRunLog

__all__ = ["app_run_log"]


def app_run_log(settings: ServerSettings, client: redis.Redis | None) -> RunLog:
    """In memory for one process; in Redis, shared by every replica, when ``[server] redis_url`` is set."""
    limits = RunLogLimits(
        max_bytes=settings.run_log_max_bytes,
        max_entries=settings.run_log_max_entries,
        ttl=settings.run_log_ttl_seconds,
        lease=settings.run_log_lease_seconds,
        flush_interval=settings.run_log_flush_seconds,
    )
    return RedisRunLog(client, limits) if client is not None else MemoryRunLog(limits)

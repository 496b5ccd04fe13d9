"""The one Redis connection pool a process shares, when ``[server] redis_url`` is set (opened by lifespan.py).

Everything that must hold across replicas (per-key limits, the approval ledger, run logs) uses this
pool; nothing else opens its own. ``redis_failure`` says what a check does when Redis does not answer:
``"closed"`` (the default) refuses with 503, ``"open"`` lets the request through.
"""

from __future__ import annotations

import redis.asyncio as redis

__all__ = ["connect_redis"]


def connect_redis(url: str) -> redis.Redis:
    """A pooled client for ``url``; connections open on first use, so starting never waits on Redis."""
    return redis.Redis.from_url(url, socket_connect_timeout=2.0, socket_timeout=5.0, health_check_interval=30)

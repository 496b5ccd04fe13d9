"""The health of the models in fallback chains: a circuit breaker per ``provider:model``.

A model that failed ``failures`` times within ``window`` seconds cools down for ``cooldown`` seconds:
chains skip it (docs/providers.md, "Failover"). ``MemoryHealth`` is one process's; ``RedisHealth``
shares it between every replica with the same ``[server] redis_url``, one Redis operation per recorded
failure and one per run that asks, never per token.
"""

from __future__ import annotations

import logging
import time
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol

from redis.asyncio import Redis
from redis.exceptions import RedisError

from chatgate.config import ServerSettings

__all__ = ["BreakerRule", "MemoryHealth", "ModelHealth", "RedisHealth", "model_health"]

logger = logging.getLogger("chatgate.runner")


@dataclass(frozen=True, slots=True)
class BreakerRule:
    """When a model cools down: ``failures`` within ``window`` seconds; for how long: ``cooldown`` seconds."""

    failures: int = 3
    window: float = 30.0
    cooldown: float = 30.0

    @classmethod
    def of(cls, server: ServerSettings) -> BreakerRule:
        """The rule ``[server]`` sets (its ``failover_*`` settings)."""
        return cls(server.failover_failures, server.failover_window_seconds, server.failover_cooldown_seconds)


class ModelHealth(Protocol):
    """Which models are cooling down, and their failures."""

    async def cooling_down(self, models: Sequence[str]) -> set[str]:
        """Those of ``models`` (``provider:model``) to skip now."""
        ...

    async def failed(self, model: str) -> None:
        """``model`` failed a call in a way that moved its step on to the next model."""
        ...


Tripped = Callable[[str], None]
"""Told the model whose failure started its cooldown (``Metrics.count_breaker_trip``)."""


def _ignore(model: str) -> None:
    """No one to tell of a trip."""


class MemoryHealth:
    """One process's breaker: failure times per model, and when each cooling model is back."""

    __slots__ = ("_failures", "_rule", "_tripped", "_until")

    def __init__(self, rule: BreakerRule, tripped: Tripped = _ignore) -> None:
        self._rule, self._tripped = rule, tripped
        self._failures: dict[str, deque[float]] = {}
        self._until: dict[str, float] = {}

    async def cooling_down(self, models: Sequence[str]) -> set[str]:
        """Those of ``models`` whose cooldown has not ended."""
        now = time.monotonic()
        return {model for model in models if self._until.get(model, 0.0) > now}

    async def failed(self, model: str) -> None:
        """Note a failure; the ``failures``-th within the window starts the cooldown."""
        now = time.monotonic()
        times = self._failures.setdefault(model, deque())
        times.append(now)
        while times and times[0] <= now - self._rule.window:
            times.popleft()
        if len(times) >= self._rule.failures:
            times.clear()
            self._until[model] = now + self._rule.cooldown
            self._tripped(model)


# KEYS[1] the model's failure count, KEYS[2] its cooldown flag; ARGV: failures, window ms, cooldown ms.
# The count's window starts at its first failure (its expiry); reaching the limit sets the flag.
_FAILED = """
local count = redis.call('INCR', KEYS[1])
if count == 1 then redis.call('PEXPIRE', KEYS[1], ARGV[2]) end
if count >= tonumber(ARGV[1]) then
  redis.call('DEL', KEYS[1])
  redis.call('SET', KEYS[2], '1', 'PX', ARGV[3])
end
return count
"""


class RedisHealth:
    """The breaker shared by every process on one Redis: a counted window and a cooldown key per model."""

    __slots__ = ("_prefix", "_redis", "_rule", "_tripped")

    def __init__(
        self, redis: Redis, rule: BreakerRule, prefix: str = "chatgate:health:", tripped: Tripped = _ignore
    ) -> None:
        self._redis, self._rule, self._prefix, self._tripped = redis, rule, prefix, tripped

    async def cooling_down(self, models: Sequence[str]) -> set[str]:
        """Those of ``models`` with a cooldown key: one ``MGET``; none when Redis cannot say (never a refusal)."""
        try:
            flags = await self._redis.mget([f"{self._prefix}cool:{model}" for model in models])
        except RedisError as exc:
            logger.warning("the fallback breaker cannot read Redis (%r); every model is tried", exc)
            return set()
        return {model for model, flag in zip(models, flags, strict=True) if flag is not None}

    async def failed(self, model: str) -> None:
        """Count the failure and start the cooldown at the limit: one script."""
        rule = self._rule
        keys = (f"{self._prefix}fail:{model}", f"{self._prefix}cool:{model}")
        window, cooldown = int(rule.window * 1000), int(rule.cooldown * 1000)
        try:
            count = await self._redis.eval(_FAILED, 2, *keys, rule.failures, window, cooldown)
        except RedisError as exc:
            logger.warning("the fallback breaker cannot count %s's failure in Redis (%r)", model, exc)
            return
        if int(count) >= rule.failures:  # this process's failure started the cooldown
            self._tripped(model)


def model_health(server: ServerSettings, redis: Redis | None, tripped: Tripped = _ignore) -> ModelHealth:
    """The breaker ``[server]`` sets: shared through ``redis`` when there is one, else this process's.

    ``tripped`` is told of each cooldown this process's failure started.
    """
    rule = BreakerRule.of(server)
    return RedisHealth(redis, rule, tripped=tripped) if redis is not None else MemoryHealth(rule, tripped)

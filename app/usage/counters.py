"""Spend counters per budget scope and calendar window: in Redis across replicas, else in this process.

A scope is ``key:ID``, ``person:OWNER`` or ``agent:NAME``. Each (scope, window) holds tokens and
micro-dollars (integers, so Redis adds them atomically with ``INCRBY``); the window is part of the
Redis key (``chatgate:spend:{scope}:{2026-11-25}:tokens``), which expires a day after the window ends.
Counters move once per model call, never per token.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Protocol

import redis.asyncio as redis

from chatgate.config import Window, window_end, window_id

__all__ = ["MemoryCounters", "RedisCounters", "Spend", "SpendCounters"]

_WINDOWS: tuple[Window, ...] = ("day", "month")


@dataclass(frozen=True, slots=True)
class Spend:
    """What a scope spent in one window."""

    tokens: int = 0
    micro_usd: int = 0


class SpendCounters(Protocol):
    """Where spend is counted for budgets."""

    async def add(self, scopes: Sequence[str], tokens: int, micro_usd: int, now: datetime) -> None:
        """Add one model call's spend to every scope's current day and month."""
        ...

    async def spent(self, scopes: Sequence[str], now: datetime) -> dict[tuple[str, Window], Spend]:
        """Each scope's spend in its current day and month."""
        ...


class MemoryCounters:
    """Counters in this process: each ``--workers`` process and each replica counts alone."""

    def __init__(self) -> None:
        self._spend: dict[tuple[str, str], Spend] = {}

    async def add(self, scopes: Sequence[str], tokens: int, micro_usd: int, now: datetime) -> None:
        """Add to the current windows, dropping windows that have ended."""
        current = {window_id(window, now) for window in _WINDOWS}
        for key in [key for key in self._spend if key[1] not in current]:
            del self._spend[key]
        for scope in scopes:
            for window in _WINDOWS:
                key = (scope, window_id(window, now))
                was = self._spend.get(key, Spend())
                self._spend[key] = Spend(was.tokens + tokens, was.micro_usd + micro_usd)

    async def spent(self, scopes: Sequence[str], now: datetime) -> dict[tuple[str, Window], Spend]:
        """The current windows' spend."""
        return {
            (scope, window): self._spend.get((scope, window_id(window, now)), Spend())
            for scope in scopes
            for window in _WINDOWS
        }


_ADD_BODY = """
for i = FIRST, #KEYS, 4 do
  redis.call('INCRBY', KEYS[i], ARGV[1])
  redis.call('INCRBY', KEYS[i + 1], ARGV[2])
  redis.call('INCRBY', KEYS[i + 2], ARGV[1])
  redis.call('INCRBY', KEYS[i + 3], ARGV[2])
  redis.call('EXPIREAT', KEYS[i], ARGV[3])
  redis.call('EXPIREAT', KEYS[i + 1], ARGV[3])
  redis.call('EXPIREAT', KEYS[i + 2], ARGV[4])
  redis.call('EXPIREAT', KEYS[i + 3], ARGV[4])
end
"""
_ADD = _ADD_BODY.replace("FIRST", "1")
"""KEYS: per scope, its day's tokens and micro-dollars, then its month's; ARGV: the two amounts, the two expiries."""
_ADD_AND_RELEASE = "redis.call('ZREM', KEYS[1], ARGV[5])" + _ADD_BODY.replace("FIRST", "2")
"""As ``_ADD`` after KEYS[1], a stream slots' sorted set, whose member ARGV[5] it removes (the run's slot)."""


class RedisCounters:
    """Counters every replica shares: one script call to add a model call's spend, one ``MGET`` to read."""

    def __init__(self, client: redis.Redis) -> None:
        self._redis = client
        self._add = client.register_script(_ADD)
        self._add_and_release = client.register_script(_ADD_AND_RELEASE)

    @staticmethod
    def keys(scopes: Sequence[str], now: datetime) -> list[str]:
        """The Redis keys of every scope's day and month: tokens, then micro-dollars (what ``spent`` reads)."""
        day, month = window_id("day", now), window_id("month", now)
        keys: list[str] = []
        for scope in scopes:
            for window in (day, month):
                keys += (f"chatgate:spend:{scope}:{window}:tokens", f"chatgate:spend:{scope}:{window}:micro_usd")
        return keys

    async def add(self, scopes: Sequence[str], tokens: int, micro_usd: int, now: datetime) -> None:
        """``INCRBY`` both measures of each window (atomic, one round trip); a key expires a day after its window."""
        await self._add(keys=self.keys(scopes, now), args=[tokens, micro_usd, *_expiries(now)])

    async def add_and_release(
        self, scopes: Sequence[str], tokens: int, micro_usd: int, now: datetime, slots_key: str, member: str
    ) -> None:
        """``add``, and in the same script remove ``member`` from the sorted set ``slots_key`` (a run's stream slot)."""
        keys = [slots_key, *self.keys(scopes, now)]
        await self._add_and_release(keys=keys, args=[tokens, micro_usd, *_expiries(now), member])

    async def spent(self, scopes: Sequence[str], now: datetime) -> dict[tuple[str, Window], Spend]:
        """One ``MGET`` of every window's two counters."""
        return self.spend_of(scopes, await self._redis.mget(self.keys(scopes, now)))

    @staticmethod
    def spend_of(scopes: Sequence[str], values: Sequence[bytes | str | None]) -> dict[tuple[str, Window], Spend]:
        """What ``spent`` returns, from the values of ``keys`` (read by ``MGET`` or another script)."""
        spent: dict[tuple[str, Window], Spend] = {}
        index = 0
        for scope in scopes:
            for window in _WINDOWS:
                spent[(scope, window)] = Spend(int(values[index] or 0), int(values[index + 1] or 0))
                index += 2
        return spent


def _expiries(now: datetime) -> tuple[int, int]:
    """When the current day's and month's counters expire: a day after their window ends (Unix seconds)."""
    return (
        int((window_end("day", now) + timedelta(days=1)).timestamp()),
        int((window_end("month", now) + timedelta(days=1)).timestamp()),
    )

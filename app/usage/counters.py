"""Spend counters per budget scope and calendar window: in Redis across replicas, else in this process.

A scope is ``key:ID``, ``person:OWNER`` or ``agent:NAME``. Each (scope, window) holds tokens and
micro-dollars (integers, so Redis adds them atomically with ``HINCRBY``); the window is part of the
Redis key (``chatgate:spend:{scope}:{2026-11-25}``), which expires a day after the window ends.
Counters move once per model call, never per token.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Protocol

import redis.asyncio as redis

from chatgate.usage.budget import Window, window_end, window_id

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


class RedisCounters:
    """Counters every replica shares: one pipelined round trip to add, one to read."""

    def __init__(self, client: redis.Redis) -> None:
        self._redis = client

    @staticmethod
    def _key(scope: str, window: Window, now: datetime) -> str:
        return f"chatgate:spend:{scope}:{window_id(window, now)}"

    async def add(self, scopes: Sequence[str], tokens: int, micro_usd: int, now: datetime) -> None:
        """``HINCRBY`` both measures of each window; the key expires a day after its window."""
        pipe = self._redis.pipeline(transaction=False)
        for scope in scopes:
            for window in _WINDOWS:
                key = self._key(scope, window, now)
                pipe.hincrby(key, "tokens", tokens)
                pipe.hincrby(key, "micro_usd", micro_usd)
                pipe.expireat(key, window_end(window, now) + timedelta(days=1))
        await pipe.execute()

    async def spent(self, scopes: Sequence[str], now: datetime) -> dict[tuple[str, Window], Spend]:
        """``HMGET`` of each window."""
        pipe = self._redis.pipeline(transaction=False)
        keys = [(scope, window) for scope in scopes for window in _WINDOWS]
        for scope, window in keys:
            pipe.hmget(self._key(scope, window, now), "tokens", "micro_usd")
        values = await pipe.execute()
        pairs = zip(keys, values, strict=True)
        return {key: Spend(int(tokens or 0), int(micro_usd or 0)) for key, (tokens, micro_usd) in pairs}

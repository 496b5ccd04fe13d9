"""Spend counters per budget scope and calendar window: in Redis across replicas, else in this process.

A scope is ``key:ID``, ``person:OWNER`` or ``agent:NAME``. Each (scope, window) holds tokens and
micro-dollars (integers, so Redis adds them atomically); the window is part of the Redis key
(``chatgate:spend:{scope}:{2026-11-25}:tokens``), which expires a day after the window ends. The counters
read what was spent plus what the calls in flight hold (holds.py); each trip settles, judges and holds in
one atomic step. Counters move once per model call, never per token.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import redis.asyncio as redis

from chatgate.config import Window
from chatgate.usage.holds import BUDGET_LUA, HELD, REACHED, WITHIN, BudgetStep, unheld

__all__ = ["MemoryCounters", "RedisCounters", "Spend", "SpendCounters", "StepAnswer"]

_WINDOWS: tuple[Window, ...] = ("day", "month")

_NOW_MS = """
local time = redis.call('TIME')
local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
"""


@dataclass(frozen=True, slots=True)
class Spend:
    """What a scope spent (and holds) in one window; also what one model call reserves."""

    tokens: int = 0
    micro_usd: int = 0


@dataclass(frozen=True, slots=True)
class StepAnswer:
    """A step's outcome (``REACHED``, ``WITHIN`` or ``HELD``) and each scope's window as judged."""

    outcome: int
    spent: dict[tuple[str, Window], Spend]


class SpendCounters(Protocol):
    """Where spend is counted for budgets."""

    async def step(self, step: BudgetStep) -> StepAnswer:
        """Settle, judge and perhaps hold, atomically."""
        ...


def _reached(step: BudgetStep, spent: dict[tuple[str, Window], Spend]) -> bool:
    """Whether a scope's window has reached one of ``step``'s limits."""
    for scope, (tokens_day, micro_day, micro_month) in zip(step.scopes, step.limits, strict=True):
        day, month = spent[(scope, "day")], spent[(scope, "month")]
        for limit, used in ((tokens_day, day.tokens), (micro_day, day.micro_usd), (micro_month, month.micro_usd)):
            if limit >= 0 and used >= limit:
                return True
    return False


class MemoryCounters:
    """Counters in this process: each ``--workers`` process and each replica counts alone.

    A step runs without awaiting anything, so it is atomic for every run of the process.
    """

    def __init__(self) -> None:
        self._spend: dict[tuple[str, str], Spend] = {}
        self._holds: dict[str, tuple[float, tuple[str, ...]]] = {}  # member: when it lapses, its scopes

    async def step(self, step: BudgetStep) -> StepAnswer:
        """See ``SpendCounters.step``."""
        day, month = step.windows.day, step.windows.month
        for key in [key for key in self._spend if key[1] not in (day, month)]:
            del self._spend[key]  # windows that have ended
        if step.settle and (held := self._holds.pop(step.settle, None)) is not None:
            self._unhold(step.settle, held[1])
        self._add(step.scopes, step.tokens, step.micro_usd, day, month)
        now = time.monotonic()
        for member, (lapses, scopes) in list(self._holds.items()):
            if lapses <= now:
                del self._holds[member]
                self._unhold(member, scopes)
        spent: dict[tuple[str, Window], Spend] = {}
        for scope in step.scopes:
            spent[(scope, "day")] = self._spend.get((scope, day), Spend())
            spent[(scope, "month")] = self._spend.get((scope, month), Spend())
        if _reached(step, spent):
            return StepAnswer(REACHED, spent)
        if not step.hold:
            return StepAnswer(WITHIN, spent)
        tokens, micro_usd, _ = unheld(step.hold)
        self._add(step.scopes, tokens, micro_usd, day, month)
        self._holds[step.hold] = (now + step.hold_ms / 1000, step.scopes)
        return StepAnswer(HELD, spent)

    def _add(self, scopes: Sequence[str], tokens: int, micro_usd: int, *windows: str) -> None:
        for scope in scopes:
            for window in windows:
                was = self._spend.get((scope, window), Spend())
                self._spend[(scope, window)] = Spend(was.tokens + tokens, was.micro_usd + micro_usd)

    def _unhold(self, member: str, scopes: Sequence[str]) -> None:
        """Take a hold out of the windows it was added to, where they are still counted."""
        tokens, micro_usd, day = unheld(member)
        for scope in scopes:
            for window in (day, day[:7]):
                was = self._spend.get((scope, window))
                if was is not None:
                    self._spend[(scope, window)] = Spend(was.tokens - tokens, was.micro_usd - micro_usd)


_STEP = (
    _NOW_MS
    + BUDGET_LUA
    + """
local answer = budget_step(1, 1, now)
if answer[1] == 1 and ARGV[8] ~= '' then
  budget_hold(1, 1, now)
  answer[1] = 2
end
return answer
"""
)
"""``BudgetStep`` on its own: KEYS and ARGV as ``RedisCounters.call`` lays them out."""
_STEP_AND_RELEASE = (
    _STEP.replace("budget_step(1, 1, now)", "budget_step(2, 1, now)")
    .replace("budget_hold(1, 1, now)", "budget_hold(2, 1, now)")
    .replace("local answer", "redis.call('ZREM', KEYS[1], ARGV[#ARGV])\nlocal answer", 1)
)
"""As ``_STEP`` after KEYS[1], a stream slots' sorted set, whose member (the last ARGV) it removes (the run's slot)."""


class RedisCounters:
    """Counters every replica shares: one script call a step."""

    def __init__(self, client: redis.Redis) -> None:
        self._step = client.register_script(_STEP)
        self._step_and_release = client.register_script(_STEP_AND_RELEASE)

    @staticmethod
    def call(step: BudgetStep) -> tuple[list[str], list[str | int]]:
        """The KEYS and ARGV of ``step`` for ``BUDGET_LUA`` (holds.py), in this script or another."""
        windows = step.windows
        day, month = windows.day, windows.month
        keys: list[str] = []
        for scope in step.scopes:
            for window in (day, month):
                keys += (f"chatgate:spend:{scope}:{window}:tokens", f"chatgate:spend:{scope}:{window}:micro_usd")
            keys.append(f"chatgate:holds:{scope}")
        args: list[str | int] = [day, month, windows.day_expires, windows.month_expires]
        args += [step.settle, step.tokens, step.micro_usd]
        args += [step.hold, step.hold_ms]
        for limits in step.limits:
            args += limits
        return keys, args

    async def step(self, step: BudgetStep) -> StepAnswer:
        """See ``SpendCounters.step``."""
        keys, args = self.call(step)
        return self.answer(step.scopes, await self._step(keys=keys, args=args))

    async def step_and_release(self, step: BudgetStep, slots_key: str, member: str) -> StepAnswer:
        """``step``, and in the same script take ``member`` (a run's stream slot) out of ``slots_key``."""
        keys, args = self.call(step)
        return self.answer(step.scopes, await self._step_and_release(keys=[slots_key, *keys], args=[*args, member]))

    @staticmethod
    def answer(scopes: Sequence[str], reply: Sequence[Any]) -> StepAnswer:
        """A step's answer from the script's ``{outcome, values}``.

        The values are, per scope, its day's then its month's counters, each tokens then micro-dollars.
        """
        outcome, values = int(reply[0]), reply[1]
        spent: dict[tuple[str, Window], Spend] = {}
        index = 0
        for scope in scopes:
            for window in _WINDOWS:
                spent[(scope, window)] = Spend(int(values[index] or 0), int(values[index + 1] or 0))
                index += 2
        return StepAnswer(outcome, spent)

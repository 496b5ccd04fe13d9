"""A step of the spend counters, in a real Redis and in memory: reserve, settle, refuse, and lapse.

A limit of 300 tokens a day; each call reserves 100 tokens and uses 60.
"""

from __future__ import annotations

import secrets
from collections.abc import AsyncIterator
from datetime import UTC, datetime

import pytest
import redis.asyncio as aioredis

from chatgate.usage.counters import MemoryCounters, RedisCounters, Spend, SpendCounters
from chatgate.usage.holds import HELD, REACHED, WITHIN, BudgetStep, Windows, hold_member

LIMITS = ((300, -1, -1),)


@pytest.fixture(params=["memory", "redis"])
async def counters(request: pytest.FixtureRequest) -> AsyncIterator[SpendCounters]:
    if request.param == "memory":
        yield MemoryCounters()
        return
    client = aioredis.Redis.from_url(request.getfixturevalue("redis_url"))
    yield RedisCounters(client)
    await client.aclose()


def _step(scope: str, *, settle: str = "", tokens: int = 0, hold: bool = True, hold_ms: int = 60_000) -> BudgetStep:
    windows = Windows.of(datetime.now(UTC))
    member = hold_member(secrets.token_hex(4), 100, 0, windows.day) if hold else ""
    return BudgetStep((scope,), LIMITS, windows, settle=settle, tokens=tokens, hold=member, hold_ms=hold_ms)


async def test_holds_count_at_once_and_are_replaced_by_the_real_use(counters: SpendCounters) -> None:
    scope = f"key:k{secrets.token_hex(4)}"
    held = [_step(scope) for _ in range(4)]
    answers = [await counters.step(step) for step in held]
    # Admitted while spend plus holds is below 300: 0, 100, 200; the fourth is refused and holds nothing.
    assert [answer.outcome for answer in answers] == [HELD, HELD, HELD, REACHED]
    assert answers[3].spent[(scope, "day")] == Spend(300, 0)
    # Each call used 60: settled, the window reads 180, room for another call.
    for step in held[:3]:
        await counters.step(_step(scope, settle=step.hold, tokens=60, hold=False))
    answer = await counters.step(_step(scope))
    assert answer.outcome == HELD and answer.spent[(scope, "day")] == Spend(180, 0)


async def test_a_hold_no_one_settles_lapses_and_a_late_settle_counts_only_the_use(counters: SpendCounters) -> None:
    scope = f"agent:a{secrets.token_hex(4)}"
    crashed = [_step(scope, hold_ms=0) for _ in range(3)]  # a process that died holding the whole budget
    assert [(await counters.step(step)).outcome for step in crashed] == [HELD] * 3
    # The next step takes the lapsed holds out before judging: the budget is free again.
    answer = await counters.step(_step(scope, hold=False))
    assert answer.outcome == WITHIN and answer.spent[(scope, "day")] == Spend(0, 0)
    # A run whose hold lapsed settles later: its use counts, its hold is not taken out twice.
    answer = await counters.step(_step(scope, settle=crashed[0].hold, tokens=60, hold=False))
    assert answer.spent[(scope, "day")] == Spend(60, 0)

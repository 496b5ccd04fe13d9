"""The fallback breaker: a failing model skipped for a cooldown, in one process and shared through Redis."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Callable

import httpx
import pytest
from redis.asyncio import Redis

from chatgate.config import Config
from chatgate.errors import ConfigError
from chatgate.run.health import BreakerRule, MemoryHealth, ModelHealth, RedisHealth
from chatgate.run.runner import run_agent
from chatgate.run_input import RunInput
from chatgate.telemetry import Metrics
from tests.conftest import make_config
from tests.providers.fakes import fake_in_thread, text_reply
from tests.providers.support import collect, provider_table
from tests.run.test_failover import HELLO, answer_text, chained, status

RULE = BreakerRule(failures=2, window=60.0, cooldown=60.0)


async def trips_after_failures(health: ModelHealth, trips: list[str]) -> None:
    assert await health.cooling_down(["a:x", "b:y"]) == set()
    await health.failed("a:x")
    assert await health.cooling_down(["a:x", "b:y"]) == set()
    assert trips == []
    await health.failed("a:x")
    assert await health.cooling_down(["a:x", "b:y"]) == {"a:x"}
    assert trips == ["a:x"]  # the breaker's state change, told once (a metric in the app)


async def test_memory_health_trips_at_the_limit_and_cools_down() -> None:
    trips: list[str] = []
    await trips_after_failures(MemoryHealth(RULE, trips.append), trips)
    short = MemoryHealth(BreakerRule(failures=1, window=60.0, cooldown=0.05))
    await short.failed("a:x")
    assert await short.cooling_down(["a:x"]) == {"a:x"}
    await asyncio.sleep(0.1)
    assert await short.cooling_down(["a:x"]) == set()


async def test_memory_health_forgets_failures_older_than_the_window() -> None:
    health = MemoryHealth(BreakerRule(failures=2, window=0.05, cooldown=60.0))
    await health.failed("a:x")
    await asyncio.sleep(0.1)
    await health.failed("a:x")
    assert await health.cooling_down(["a:x"]) == set()


async def test_redis_health_trips_at_the_limit(redis_url: str) -> None:
    redis = Redis.from_url(redis_url)
    try:
        trips: list[str] = []
        await trips_after_failures(RedisHealth(redis, RULE, f"test:{uuid.uuid4().hex}:", trips.append), trips)
    finally:
        await redis.aclose()


async def test_redis_health_unreachable_skips_nothing() -> None:
    redis = Redis.from_url("redis://127.0.0.1:1", socket_connect_timeout=1)
    try:
        health = RedisHealth(redis, RULE)
        await health.failed("a:x")  # logged, not raised
        assert await health.cooling_down(["a:x"]) == set()
    finally:
        await redis.aclose()


async def test_the_breaker_skips_a_dead_model_after_its_failures() -> None:
    metrics = Metrics()
    async with chained(status(500), text_reply("openai", "Hi"), health=MemoryHealth(RULE)) as (agent, (dead, live)):
        for _ in range(5):
            events = await collect(run_agent(agent, RunInput(HELLO), metrics=metrics))
            assert answer_text(events) == "Hi"
    assert len(dead.requests) == RULE.failures
    assert len(live.requests) == 5
    skipped = {"agent": "helper", "from": "up0:m0", "to": "up1:m1", "reason": "cooling_down"}
    assert metrics.registry.get_sample_value("chatgate_failovers_total", skipped) == 5 - RULE.failures


async def test_every_model_cooling_down_still_tries_the_first() -> None:
    health = MemoryHealth(RULE)
    for _ in range(RULE.failures):
        await health.failed("up0:m0")
        await health.failed("up1:m1")
    async with chained(text_reply("openai", "Hi"), text_reply("openai", "Yo"), health=health) as (
        agent,
        (_first, second),
    ):
        events = await collect(run_agent(agent, RunInput(HELLO)))
    assert answer_text(events) == "Hi"
    assert len(second.requests) == 0


def test_two_instances_share_the_breaker_through_redis(serve: Callable[[Config], str], redis_url: str) -> None:
    dead_model = f"dead-{uuid.uuid4().hex[:8]}"  # this test's own breaker keys in the session's Redis
    with fake_in_thread(status(500)) as dead, fake_in_thread(text_reply("openai", "Hi")) as live:
        config = make_config(
            {"helper": {"model": f"up0:{dead_model}", "fallbacks": ["up1:m1"], "default": True}},
            providers={"up0": provider_table("openai", dead.url), "up1": provider_table("openai", live.url)},
            server={"redis_url": redis_url, "failover_failures": 2, "failover_cooldown_seconds": 60},
        )
        replicas = [serve(config), serve(config)]
        for turn in range(6):
            body = {"threadId": "t", "runId": f"r{turn}", "messages": [{"id": "u1", "role": "user", "content": "Hi"}]}
            answer = httpx.post(replicas[turn % 2] + "/ag-ui", json=body, timeout=30)
            assert '"delta":"Hi"' in answer.text
        assert len(dead.requests) == 2  # at most N in total across both replicas during the cooldown
        assert len(live.requests) == 6


def test_the_breaker_settings_are_checked() -> None:
    with pytest.raises(ConfigError, match="failover_failures"):
        make_config({"a": {"model": "builtin:echo"}}, server={"failover_failures": 0})

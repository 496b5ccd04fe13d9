"""Weighted pools: an agent's model and its ``deployments``, one picked per run by weight, health rules alike.

In-process models count the calls they answer; the breaker is the in-process one (app/run/health.py).
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from chatgate.config import AgentConfig
from chatgate.errors import ConfigError, ProviderError
from chatgate.events import ModelFinished, RunEvent, RunFinished, TextDelta, TextEnd, TextStart
from chatgate.providers import ModelRequest
from chatgate.run.agents import Agent
from chatgate.run.failover import ChainEntry
from chatgate.run.health import BreakerRule, MemoryHealth
from chatgate.run.runner import run_agent
from chatgate.run_input import RunInput
from tests.conftest import make_config
from tests.providers.support import collect
from tests.run.test_failover import HELLO, answer_text

RUNS = 400


class Deployment:
    """An in-process model that answers its own name, or fails as an upstream 5xx when ``down``."""

    def __init__(self, name: str, *, down: bool = False) -> None:
        self.name, self.down, self.calls = name, down, 0

    async def stream(self, request: ModelRequest) -> AsyncIterator[RunEvent]:
        self.calls += 1
        if self.down:
            raise ProviderError("down", public_message="The model failed.", kind="upstream_5xx")
        for event in (TextStart("t"), TextDelta("t", self.name), TextEnd("t"), ModelFinished("stop")):
            yield event

    async def aclose(self) -> None:
        pass


def pooled(east: Deployment, west: Deployment, health: MemoryHealth | None = None) -> Agent:
    """``local:east`` (weight 3) with the deployment ``local:west`` (weight 1)."""
    config = AgentConfig(model="local:east", weight=3, deployments=[{"model": "local:west", "weight": 1}])
    return Agent("helper", config, east, deployments=(ChainEntry("local:west", west, {}),), health=health)


async def test_each_run_picks_a_deployment_by_weight() -> None:
    east, west = Deployment("east"), Deployment("west")
    agent = pooled(east, west)
    for _ in range(RUNS):
        await collect(run_agent(agent, RunInput(HELLO)))
    assert east.calls + west.calls == RUNS  # one call a run: nothing failed
    # 3:1 means 300 of 400 expected (a standard deviation of 8.7): the bounds are over 6 of them away.
    assert 240 <= east.calls <= 360, (east.calls, west.calls)


async def test_a_failing_deployment_moves_the_step_to_the_others() -> None:
    east, west = Deployment("east", down=True), Deployment("west")
    agent = pooled(east, west)
    for _ in range(40):
        events = await collect(run_agent(agent, RunInput(HELLO)))
        assert answer_text(events) == "west" and isinstance(events[-1], RunFinished)
    assert west.calls == 40 and 0 < east.calls < 40


async def test_a_deployment_cooling_down_is_not_picked() -> None:
    east, west = Deployment("east"), Deployment("west")
    health = MemoryHealth(BreakerRule(failures=1, window=60, cooldown=3600))
    await health.failed("local:east")  # east tripped the breaker: cooling down for an hour
    agent = pooled(east, west, health)
    for _ in range(40):
        events = await collect(run_agent(agent, RunInput(HELLO)))
        assert answer_text(events) == "west"
    assert east.calls == 0 and west.calls == 40


def test_deployments_are_checked_as_fallbacks_are() -> None:
    with pytest.raises(ConfigError, match=r"agents\.helper\.deployments\[0\]: unknown provider 'nope'"):
        make_config({"helper": {"model": "builtin:echo", "deployments": ["nope:x"]}})
    with pytest.raises(ConfigError, match="weight"):
        make_config({"helper": {"model": "builtin:echo", "deployments": [{"model": "builtin:echo", "weight": 0}]}})
    config = make_config({"helper": {"model": "builtin:echo", "weight": 2, "deployments": ["builtin:echo"]}})
    assert [entry.weight for entry in config.agents["helper"].deployment_pool] == [1.0]

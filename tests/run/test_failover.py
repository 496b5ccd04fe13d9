"""Fallback chains through the runner: real providers over real HTTP, the step moved before any event."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from typing import Any

import pytest

from chatgate.errors import ConfigError, ProviderError
from chatgate.events import RunFailed, RunFinished, StepStarted, TextDelta
from chatgate.history import TextPart, UserMessage
from chatgate.providers import CONTEXT_LENGTH_EXCEEDED
from chatgate.providers.builtin import EchoModel
from chatgate.providers.client import upstream_client
from chatgate.run.agents import Agent, AgentRegistry
from chatgate.run.failover import ChainEntry, failover_reason
from chatgate.run.health import ModelHealth
from chatgate.run.runner import run_agent
from chatgate.run_input import RunInput
from chatgate.telemetry import Metrics
from tests.conftest import make_config
from tests.providers.fakes import FakeUpstream, Reply, openai_chunk, text_reply
from tests.providers.support import collect, provider_table

HELLO = (UserMessage((TextPart("Hello"),)),)
JSON = {"content-type": "application/json"}
SHORT = {"connect": 2.0, "first_token": 0.3, "idle": 0.3}


def status(code: int, body: str = '{"error": {"message": "no"}}', **headers: str) -> Reply:
    return Reply([body.encode()], status=code, headers={**JSON, **headers})


FAILURES_THAT_MOVE_ON = {
    "500": status(500),
    "502": status(502),
    "504": status(504),
    "408": status(408),
    "429": status(429),
    "503": status(503),
    "503-long-retry-after": status(503, **{"retry-after": "3600"}),
    "cut-before-output": Reply([], ending="cut"),
    "empty-stream": Reply([b": keep-alive\n\n"]),
    "silent-first-token": Reply([], ending="silent"),
    "role-only-then-silent": Reply([openai_chunk({"role": "assistant"}), 5.0]),
}


@asynccontextmanager
async def chain_agent(
    urls: list[str],
    *,
    health: ModelHealth | None = None,
    timeouts: dict[str, float] | None = None,
    kinds: tuple[str, ...] = (),
    **agent: Any,
) -> AsyncIterator[Agent]:
    """Agent ``helper`` on ``up0:m0``, falling back to ``up1:m1``, ... (OpenAI-compatible unless ``kinds`` says).

    ``timeouts`` are the first model's: the one answering keeps generous deadlines on a loaded machine.
    """
    kinds = kinds or ("openai",) * len(urls)
    providers = {f"up{i}": provider_table(kind, url) for i, (kind, url) in enumerate(zip(kinds, urls, strict=True))}
    if timeouts:
        providers["up0"]["timeouts"] = timeouts
    fallbacks = agent.pop("fallbacks", [f"up{i}:m{i}" for i in range(1, len(urls))])
    config = make_config({"helper": {"model": "up0:m0", "fallbacks": fallbacks, **agent}}, providers=providers)
    async with upstream_client() as client:
        agent_ = AgentRegistry(config, client, health=health).get("helper")
        assert agent_ is not None
        yield agent_


@asynccontextmanager
async def chained(*replies: Reply, **options: Any) -> AsyncIterator[tuple[Agent, list[FakeUpstream]]]:
    """``chain_agent`` on one fake upstream per reply, in order."""
    async with AsyncExitStack() as stack:
        fakes = [await stack.enter_async_context(FakeUpstream(reply)) for reply in replies]
        async with chain_agent([fake.url for fake in fakes], **options) as agent:
            yield agent, fakes


def answer_text(events: list[object]) -> str:
    return "".join(event.delta for event in events if isinstance(event, TextDelta))


def sample(metrics: Metrics, name: str, **labels: str) -> float:
    value = metrics.registry.get_sample_value(name, labels)
    return value or 0.0


@pytest.mark.parametrize("failure", list(FAILURES_THAT_MOVE_ON), ids=list(FAILURES_THAT_MOVE_ON))
async def test_a_failure_before_any_event_moves_the_step_to_the_next_model(failure: str) -> None:
    metrics = Metrics()
    async with chained(FAILURES_THAT_MOVE_ON[failure], text_reply("openai", "Hi"), timeouts=SHORT) as (
        agent,
        (dead, live),
    ):
        events = await collect(run_agent(agent, RunInput(HELLO), metrics=metrics))
    assert answer_text(events) == "Hi"
    assert [type(event) for event in events].count(StepStarted) == 1  # the client sees one step, one answer
    finished = events[-1]
    assert isinstance(finished, RunFinished)
    assert [(usage.provider, usage.model) for usage in finished.usage] == [("up1", "m1")]
    assert len(dead.requests) == 1 and len(live.requests) == 1
    assert dead.bodies[0]["model"] == "m0" and live.bodies[0]["model"] == "m1"
    # Both attempts are model calls of their own: the failed one metered as an upstream error.
    assert (
        sum(
            sample(metrics, "chatgate_upstream_errors_total", provider="up0", agent="helper", kind=kind)
            for kind in ("upstream_5xx", "timeout", "rate_limited", "overloaded", "interrupted")
        )
        == 1
    )
    moved = metrics.registry.get_sample_value
    reasons = {"500": "upstream_5xx", "502": "upstream_5xx", "504": "upstream_5xx", "408": "timeout",
               "429": "rate_limited", "503": "overloaded", "503-long-retry-after": "overloaded",
               "cut-before-output": "interrupted", "empty-stream": "interrupted",
               "silent-first-token": "timeout", "role-only-then-silent": "timeout"}  # fmt: skip
    labels = {"agent": "helper", "from": "up0:m0", "to": "up1:m1", "reason": reasons[failure]}
    assert moved("chatgate_failovers_total", labels) == 1


async def test_a_connection_refused_moves_on() -> None:
    async with FakeUpstream(text_reply("openai", "Hi")) as live:
        async with FakeUpstream() as gone:
            url = gone.url
        async with chain_agent([url, live.url]) as agent:
            events = await collect(run_agent(agent, RunInput(HELLO)))
    assert answer_text(events) == "Hi"


@pytest.mark.parametrize("kind", ["anthropic", "ollama"])
async def test_the_next_model_may_be_another_kind_of_provider(kind: str) -> None:
    async with chained(status(503), text_reply(kind, "Hi"), kinds=("openai", kind)) as (agent, (_, live)):
        events = await collect(run_agent(agent, RunInput(HELLO)))
    assert answer_text(events) == "Hi"
    assert live.bodies[0]["model"] == "m1"


@pytest.mark.parametrize("code", [400, 401, 403, 404])
async def test_an_operator_error_does_not_move_on(code: int) -> None:
    async with chained(status(code), text_reply("openai", "Hi")) as (agent, (_refusing, live)):
        events = await collect(run_agent(agent, RunInput(HELLO)))
    assert events[-1] == RunFailed("The model provider rejected the request.", code="model_error")
    assert live.requests == []


async def test_a_failure_after_output_started_ends_as_today() -> None:
    broken = Reply([openai_chunk({"content": "Hal"})], ending="cut")
    async with chained(broken, text_reply("openai", "Hi")) as (agent, (_dead, live)):
        events = await collect(run_agent(agent, RunInput(HELLO)))
    failed = events[-1]
    assert isinstance(failed, RunFailed) and failed.interrupted
    assert answer_text(events) == "Hal" and live.requests == []


async def test_every_model_failing_ends_as_the_last_failure_does() -> None:
    async with chained(status(500), status(429)) as (agent, (first, second)):
        events = await collect(run_agent(agent, RunInput(HELLO)))
    assert events[-1] == RunFailed("The model provider is rate limiting requests; try again later.", code="model_error")
    assert len(first.requests) == 1 and len(second.requests) == 1
    assert [type(event) for event in events].count(StepStarted) == 1


async def test_a_fallback_table_has_its_own_settings() -> None:
    fallbacks = [{"model": "up1:m1", "model_settings": {"temperature": 0.25}}]
    async with chained(
        status(502), text_reply("openai", "Hi"), fallbacks=fallbacks, model_settings={"temperature": 0.9}
    ) as (agent, (dead, live)):
        await collect(run_agent(agent, RunInput(HELLO)))
    assert dead.bodies[0]["temperature"] == 0.9 and live.bodies[0]["temperature"] == 0.25


async def test_a_length_refusal_moves_on_only_to_a_larger_window() -> None:
    too_long = status(400, '{"error": {"message": "This model\'s maximum context length is 4096 tokens"}}')
    for window, moved in ((8192, True), (2048, False)):
        fallbacks = [{"model": "up1:m1", "window": window}]
        async with chained(too_long, text_reply("openai", "Hi"), fallbacks=fallbacks, context={"window": 4096}) as (
            agent,
            (_small, large),
        ):
            events = await collect(run_agent(agent, RunInput(HELLO)))
        assert (answer_text(events) == "Hi") is moved
        assert len(large.requests) == int(moved)


def test_the_reasons_to_move_on() -> None:
    small, large = ChainEntry("a:x", EchoModel(), {}, window=10), ChainEntry("b:y", EchoModel(), {}, window=20)
    refused = ProviderError("too long", code=CONTEXT_LENGTH_EXCEEDED)
    assert failover_reason(refused, small, large) == "context_length"
    assert failover_reason(refused, large, small) is None
    assert failover_reason(ProviderError("x", kind="rejected"), small, large) is None
    assert failover_reason(ProviderError("x", kind="other"), small, large) is None
    assert failover_reason(ProviderError("x", kind="connect"), small, large) == "connect"
    assert failover_reason(KeyboardInterrupt(), small, large) is None


def test_an_unknown_fallback_provider_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match=r"agents\.helper\.fallbacks\[0\]: unknown provider 'nope'"):
        make_config({"helper": {"model": "builtin:echo", "fallbacks": ["nope:x"]}})
    with pytest.raises(ConfigError, match="provider:model"):
        make_config({"helper": {"model": "builtin:echo", "fallbacks": ["nope"]}})

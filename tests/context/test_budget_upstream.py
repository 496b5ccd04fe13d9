"""A context window on a long conversation: every turn answered, the model shown only what fits."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from chatgate.config import AgentConfig, Config, ProviderConfig
from chatgate.context import CONTEXT_FULL, CONTEXT_LENGTH_EXCEEDED, summary_model
from chatgate.events import RunFailed, RunFinished, TextDelta
from chatgate.history import AssistantMessage, Message, TextPart, UserMessage
from chatgate.providers import build_provider
from chatgate.providers.client import upstream_client
from chatgate.run.agents import Agent, context_budget
from chatgate.run.runner import run_agent
from chatgate.run_input import RunInput
from tests.context.small_model import SmallModel
from tests.providers.support import collect, provider_table

PROMPT = "You are a patient note taker."
FILLER = "The quick brown fox jumps over the lazy dog while the cat watches from the fence. " * 3


@asynccontextmanager
async def agent_on(fake: SmallModel, **context: Any) -> AsyncIterator[Agent]:
    """An agent on ``fake`` (as llama.cpp: ``/v1`` beside ``/props``), with ``[agents.bot.context]``."""
    table = provider_table("openai", f"{fake.url}/v1")
    config = Config(providers={"up": ProviderConfig.model_validate(table)})
    settings = AgentConfig(model="up:m", system_prompt=PROMPT, model_settings={"max_tokens": 64}, context=context)
    async with upstream_client() as client:
        provider = build_provider(settings, config, client)
        context_window = context_budget("bot", settings, config, client)
        writer = summary_model(settings, provider, config, client)  # as the registry builds it
        yield Agent("bot", settings, provider, context=context_window, summary_model=writer)


def user(n: int) -> UserMessage:
    return UserMessage((TextPart(f"Turn {n}. {FILLER}"),), id=f"u{n}")


async def talk(agent: Agent, turns: int, thread: str = "t1") -> list[Message]:
    """``turns`` turns on one thread, the client resending the whole history each time (a stateless agent)."""
    history: list[Message] = []
    for n in range(1, turns + 1):
        history.append(user(n))
        events = await collect(run_agent(agent, RunInput(tuple(history), thread_id=thread, run_id=f"r{n}")))
        assert _answered(events[-1]), (n, events[-1])
        text = "".join(event.delta for event in events if isinstance(event, TextDelta))
        history.append(AssistantMessage((TextPart(text),), id=f"a{n}"))
    return history


def texts(body: dict[str, Any]) -> list[str]:
    return [message["content"] for message in body["messages"]]


async def test_thirty_turns_on_a_small_window_are_all_answered() -> None:
    async with SmallModel(n_ctx=1024) as fake, agent_on(fake, window=1024) as agent:
        await talk(agent, 30)
    assert len(fake.chats) == 30 + fake.refused  # a refusal is retried once, shorter
    assert fake.refused <= 1  # the count learns the model's tokens from its reports
    for n, request in enumerate(fake.chats[-25:], start=6):
        sent = texts(request.body)
        assert sent[0] == PROMPT and sent[-1].startswith(f"Turn {n}.")
    last = texts(fake.chats[-1].body)
    assert not any(text.startswith("Turn 1.") for text in last)  # the oldest turns were left out
    assert max(prompt for prompt, request in zip(fake.prompts, fake.chats, strict=True)) <= 1024 - 64 or fake.refused


async def test_without_a_window_the_upstream_refusal_ends_the_run_with_the_advice() -> None:
    async with SmallModel(n_ctx=1024) as fake, agent_on(fake) as agent:
        history: list[Message] = [user(n) for n in range(1, 20)]
        events = await collect(run_agent(agent, RunInput(tuple(history), thread_id="t")))
    assert events[-1] == RunFailed(CONTEXT_FULL, code=CONTEXT_LENGTH_EXCEEDED)
    assert len(fake.chats) == 1  # no budget, so nothing to trim: no retry


async def test_strategy_fail_ends_with_the_advice_before_calling_the_model() -> None:
    async with SmallModel(n_ctx=1024) as fake, agent_on(fake, window=1024, strategy="fail") as agent:
        history = tuple(message for n in range(1, 20) for message in (user(n), AssistantMessage((TextPart("ok"),))))
        events = await collect(run_agent(agent, RunInput(history[:-1], thread_id="t")))
    assert events[-1] == RunFailed(CONTEXT_FULL, code=CONTEXT_LENGTH_EXCEEDED)
    assert fake.chats == []


async def test_a_refusal_despite_the_count_trims_further_and_retries_once() -> None:
    # The configured window is larger than the server's real one: the first call is refused.
    async with SmallModel(n_ctx=700) as fake, agent_on(fake, window=1024) as agent:
        history = tuple(message for n in range(1, 8) for message in (user(n), AssistantMessage((TextPart("ok"),))))
        events = await collect(run_agent(agent, RunInput(history[:-1], thread_id="t")))
    assert _answered(events[-1])
    assert fake.refused == 1 and len(fake.chats) == 2
    assert len(fake.chats[1].body["messages"]) < len(fake.chats[0].body["messages"])
    assert texts(fake.chats[1].body)[-1].startswith("Turn 7.")


async def test_a_second_refusal_ends_the_run() -> None:
    async with SmallModel(n_ctx=100) as fake, agent_on(fake, window=4096) as agent:
        history = tuple(message for n in range(1, 8) for message in (user(n), AssistantMessage((TextPart("ok"),))))
        events = await collect(run_agent(agent, RunInput(history[:-1], thread_id="t")))
    assert events[-1] == RunFailed(CONTEXT_FULL, code=CONTEXT_LENGTH_EXCEEDED)
    assert fake.refused == 2 and len(fake.chats) == 2


async def test_auto_asks_llama_cpp_for_its_context_per_slot_once() -> None:
    async with SmallModel(n_ctx=1024) as fake, agent_on(fake, window="auto") as agent:
        await talk(agent, 14)
    assert [request.path for request in fake.requests].count("/props") == 1
    assert agent.context is not None and agent.context.window == 1024
    assert not any(text.startswith("Turn 1.") for text in texts(fake.chats[-1].body))


async def test_runs_starting_together_wait_for_one_answer_from_props() -> None:
    async with SmallModel(n_ctx=1024) as fake, agent_on(fake, window="auto") as agent:
        history = tuple(message for n in range(1, 15) for message in (user(n), AssistantMessage((TextPart("ok"),))))
        runs = [collect(run_agent(agent, RunInput(history[:-1], thread_id=f"t{n}"))) for n in range(3)]
        ended = [events[-1] for events in await asyncio.gather(*runs)]
    assert len(ended) == 3 and all(_answered(event) for event in ended)
    assert [request.path for request in fake.requests].count("/props") == 1
    # None of the three went without the window: with none, a refusal is not retried and the run fails.
    assert len(fake.chats) == 3 + fake.refused


async def test_summarize_on_a_stateless_agent_leaves_turns_out_as_drop_oldest() -> None:
    # No store to keep a summary in: summarizing anew on every request would double each turn's calls.
    async with SmallModel(n_ctx=1024) as fake, agent_on(fake, window=1024, strategy="summarize") as agent:
        await talk(agent, 14)
    assert agent.summary_model is not None and len(fake.chats) == 14 + fake.refused  # no summary call
    assert all(request.body["messages"][0]["content"] == PROMPT for request in fake.chats)
    assert not any(text.startswith("Turn 1.") for text in texts(fake.chats[-1].body))


def _answered(event: object) -> bool:
    """A run that ended with the model's own stop (whatever usage it reports)."""
    return isinstance(event, RunFinished) and event.reason == "stop"

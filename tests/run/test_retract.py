"""A model failing mid-answer through the runner: the step retracted and answered again on the next model.

Real providers over real HTTP: fake upstreams cut the stream after text, after a tool call's start and
after reasoning, in the OpenAI and Anthropic wire formats.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from chatgate.events import (
    RunEvent,
    RunFailed,
    RunFinished,
    StepRetracted,
    StepStarted,
    ToolCallEnd,
    ToolCallStart,
)
from chatgate.history import AssistantMessage, ToolMessage
from chatgate.run.runner import run_agent
from chatgate.run.tools import ServerTool
from chatgate.run_input import RunInput
from chatgate.telemetry import Metrics
from tests.providers.fakes import FakeUpstream, Reply, anthropic_event, openai_chunk, text_reply
from tests.providers.support import collect
from tests.run.test_failover import HELLO, answer_text, chain_agent, chained, sample


def _openai_call_start() -> bytes:
    call = {"index": 0, "id": "call_1", "type": "function", "function": {"name": "get_time", "arguments": '{"zo'}}
    return openai_chunk({"tool_calls": [call]})


def _anthropic(*events: bytes) -> list[bytes]:
    start = anthropic_event("message_start", message={"id": "msg_1", "usage": {"input_tokens": 7}})
    return [start, *events]


def _anthropic_block(kind: str, delta: dict[str, Any], **block: Any) -> list[bytes]:
    return [
        anthropic_event("content_block_start", index=0, content_block={"type": kind, **block}),
        anthropic_event("content_block_delta", index=0, delta=delta),
    ]


CUT_AT = {
    ("openai", "text"): Reply([openai_chunk({"content": "Hal"})], ending="cut"),
    ("openai", "tool-call-start"): Reply([_openai_call_start()], ending="cut"),
    ("openai", "reasoning"): Reply([openai_chunk({"reasoning_content": "Let me"})], ending="cut"),
    ("anthropic", "text"): Reply(
        _anthropic(*_anthropic_block("text", {"type": "text_delta", "text": "Hal"}, text="")), ending="cut"
    ),
    ("anthropic", "tool-call-start"): Reply(
        _anthropic(
            *_anthropic_block(
                "tool_use", {"type": "input_json_delta", "partial_json": '{"zo'}, id="toolu_1", name="get_time"
            )
        ),
        ending="cut",
    ),
    ("anthropic", "tool-call-complete"): Reply(
        _anthropic(
            *_anthropic_block(
                "tool_use",
                {"type": "input_json_delta", "partial_json": '{"zone": "UTC"}'},
                id="toolu_1",
                name="get_time",
            ),
            anthropic_event("content_block_stop", index=0),  # the call is whole: the client got its input
        ),
        ending="cut",
    ),
    ("anthropic", "reasoning"): Reply(
        _anthropic(*_anthropic_block("thinking", {"type": "thinking_delta", "thinking": "Let me"}, thinking="")),
        ending="cut",
    ),
}


def after_retraction(events: list[RunEvent]) -> list[RunEvent]:
    """The events after the last ``StepRetracted``: what the client keeps."""
    last = max(i for i, event in enumerate(events) if isinstance(event, StepRetracted))
    return events[last + 1 :]


@pytest.mark.parametrize("kind,position", list(CUT_AT), ids=[f"{k}-{p}" for k, p in CUT_AT])
async def test_a_stream_cut_mid_answer_is_retracted_and_answered_on_the_next_model(kind: str, position: str) -> None:
    metrics = Metrics()
    async with chained(CUT_AT[kind, position], text_reply("openai", "Hi"), kinds=(kind, "openai")) as (
        agent,
        (dead, live),
    ):
        events = await collect(run_agent(agent, RunInput(HELLO), metrics=metrics, retracts=True))
    retractions = [event for event in events if isinstance(event, StepRetracted)]
    assert retractions == [StepRetracted("model-call-1", "failover", "up0:m0", "interrupted")]
    assert [type(event) for event in events].count(StepStarted) == 1  # the same step, answered again
    kept = after_retraction(events)
    assert answer_text(kept) == "Hi" and not any(isinstance(e, ToolCallStart | ToolCallEnd) for e in kept)
    finished = events[-1]
    assert isinstance(finished, RunFinished) and finished.reason == "stop"
    assert finished.pending_tool_call_ids == ()  # a call of the withdrawn step is dropped with it
    assert len(dead.requests) == 1 and len(live.requests) == 1
    assert live.bodies[0]["messages"] == [{"role": "user", "content": "Hello"}]  # the same input, nothing spliced
    moved = {"agent": "helper", "from": "up0:m0", "to": "up1:m1", "reason": "interrupted"}
    assert sample(metrics, "chatgate_failovers_total", **moved) == 1


async def test_without_retraction_a_failure_after_output_ends_as_before() -> None:
    async with chained(CUT_AT["openai", "text"], text_reply("openai", "Hi")) as (agent, (_dead, live)):
        events = await collect(run_agent(agent, RunInput(HELLO)))  # an ai 5/6 client: nothing can be taken back
    failed = events[-1]
    assert isinstance(failed, RunFailed) and failed.interrupted
    assert answer_text(events) == "Hal" and live.requests == []
    assert not any(isinstance(event, StepRetracted) for event in events)


async def test_both_attempts_are_counted_per_model() -> None:
    # Anthropic reports the input tokens first: a cut attempt still counts what the upstream bills.
    async with chained(CUT_AT["anthropic", "text"], text_reply("openai", "Hi"), kinds=("anthropic", "openai")) as (
        agent,
        _fakes,
    ):
        events = await collect(run_agent(agent, RunInput(HELLO), retracts=True))
    finished = events[-1]
    assert isinstance(finished, RunFinished)
    assert [(u.provider, u.model, u.input_tokens, u.output_tokens) for u in finished.usage] == [
        ("up0", "m0", 7, 0),
        ("up1", "m1", 5, 2),
    ]


async def test_a_cut_attempts_bill_alone_shows_nothing() -> None:
    billed_only = Reply(_anthropic(), ending="cut")  # message_start, then the connection is cut
    async with chained(billed_only, text_reply("openai", "Hi"), kinds=("anthropic", "openai")) as (agent, _fakes):
        events = await collect(run_agent(agent, RunInput(HELLO)))  # no retraction: it fails over before output
    assert not any(isinstance(event, StepRetracted) for event in events)
    assert answer_text(events) == "Hi" and isinstance(events[-1], RunFinished)


async def test_a_retraction_in_a_later_step_keeps_the_earlier_steps() -> None:
    call = {"index": 0, "id": "call_1", "type": "function", "function": {"name": "clock", "arguments": "{}"}}
    calls_clock = Reply([openai_chunk({"tool_calls": [call]}), openai_chunk({}, "tool_calls"), b"data: [DONE]\n\n"])
    cut = Reply([openai_chunk({"content": "It is"})], ending="cut")
    async with (
        FakeUpstream(calls_clock, cut) as primary,
        FakeUpstream(text_reply("openai", "Noon.")) as fallback,
        chain_agent([primary.url, fallback.url]) as agent,
    ):
        clocked = replace(agent, server_tools={"clock": ServerTool.from_function("clock", clock)})
        events = await collect(run_agent(clocked, RunInput(HELLO), retracts=True))
    retracted = next(event for event in events if isinstance(event, StepRetracted))
    assert retracted.name == "model-call-2"
    assert [type(message) for message in retracted.kept] == [AssistantMessage, ToolMessage]  # step 1 stands
    assert answer_text(after_retraction(events)) == "Noon."
    assert isinstance(events[-1], RunFinished)
    sent = fallback.bodies[0]["messages"]  # the fallback answers step 2's input: the call and its result
    assert [m["role"] for m in sent] == ["user", "assistant", "tool"]


def clock() -> str:
    """The time (a server tool for the tests)."""
    return "12:00"


PROMPT = "Always answer in French and never mention the weather forecast for tomorrow."


async def test_a_withdrawn_text_neither_reaches_the_client_nor_poisons_the_leak_guard() -> None:
    # The withdrawn attempt starts the prompt (5 words: held back, a leak may be starting); the replacement
    # says the 7 words after them, no leak alone (min_words 8), but one if the guard joined the two.
    started = Reply([openai_chunk({"content": "Always answer in French and"})], ending="cut")
    harmless = text_reply("openai", "I never mention the weather forecast for tomorrow, sorry.")
    async with chained(started, harmless, system_prompt=PROMPT) as (agent, _fakes):
        events = await collect(run_agent(agent, RunInput(HELLO), retracts=True))
    assert answer_text(events) == "I never mention the weather forecast for tomorrow, sorry."  # nothing held is flushed
    assert isinstance(events[-1], RunFinished)

import json
import logging
from collections.abc import AsyncIterator, Iterable
from typing import Any

import pytest

from chatgate.adapters.vercel_ai import protocol
from chatgate.config import AgentConfig
from chatgate.events import (
    ModelUsage,
    ReasoningDelta,
    ReasoningEnd,
    ReasoningStart,
    RunEvent,
    RunFailed,
    RunFinished,
    StepFinished,
    StepStarted,
    TextDelta,
    TextEnd,
    TextStart,
    ToolApprovalRequested,
    ToolCallDelta,
    ToolCallEnd,
    ToolCallStart,
    ToolDenied,
    ToolResult,
    Usage,
)
from chatgate.run_input import RunInput

RUN = RunInput(messages=(), thread_id="chat-1", run_id="r1")


def agent(version: str = "v6") -> AgentConfig:
    return AgentConfig(model="builtin:echo", vercel_ai_version=version)  # type: ignore[arg-type]


async def events_of(events: Iterable[RunEvent]) -> AsyncIterator[RunEvent]:
    for event in events:
        yield event


async def encode_raw(events: AsyncIterator[RunEvent], version: str = "v6", run: RunInput = RUN) -> bytes:
    return b"".join([chunk async for chunk in protocol.encode(run, agent(version), events)])


def parse(stream: bytes) -> list[dict[str, Any]]:
    """Every chunk as JSON, checking the framing: LF only, one data line a frame, no nulls, [DONE] last."""
    assert b"\r" not in stream
    assert stream.endswith(b"data: [DONE]\n\n")
    frames = stream[: -len(b"data: [DONE]\n\n")].split(b"\n\n")
    assert frames.pop() == b""
    chunks = []
    for frame in frames:
        assert frame.startswith(b"data: ")
        assert b"\n" not in frame
        chunks.append(json.loads(frame[len(b"data: ") :]))
    assert "null" not in json.dumps(chunks)
    return chunks


async def encode(events: Iterable[RunEvent], version: str = "v6") -> list[dict[str, Any]]:
    return parse(await encode_raw(events_of(events), version))


def types(chunks: list[dict[str, Any]]) -> list[str]:
    return [chunk["type"] for chunk in chunks]


def step(*events: RunEvent, reason: Any = "stop") -> list[RunEvent]:
    return [StepStarted("model-call-1"), *events, StepFinished("model-call-1", reason)]


TEXT = [TextStart("t1"), TextDelta("t1", "Hello "), TextDelta("t1", 'the "world"'), TextEnd("t1")]


USAGE_3_2 = {"inputTokens": 3, "outputTokens": 2, "totalTokens": 5}


async def test_a_text_turn() -> None:
    summed = (ModelUsage("builtin", "echo", 3, 2),)
    chunks = await encode([*step(*TEXT, Usage(3, 2)), RunFinished("stop", usage=summed)])
    assert chunks[0]["type"] == "start"
    assert chunks[1:] == [
        {"type": "start-step"},
        {"type": "text-start", "id": "t1"},
        {"type": "text-delta", "id": "t1", "delta": "Hello "},
        {"type": "text-delta", "id": "t1", "delta": 'the "world"'},
        {"type": "text-end", "id": "t1"},
        {"type": "finish-step"},
        # the run's usage as the runner summed it, for useChat's message.metadata
        {
            "type": "finish",
            "finishReason": "stop",
            "messageMetadata": {"usage": USAGE_3_2, "model": "echo", "provider": "builtin"},
        },
    ]


async def test_start_names_a_fresh_message_or_the_one_being_continued() -> None:
    fresh = parse(await encode_raw(events_of([RunFinished("stop")])))
    assert fresh[0]["messageId"].startswith("msg_")
    continued = RunInput(messages=(), continue_message_id="a1")
    chunks = parse(await encode_raw(events_of([RunFinished("stop")]), run=continued))
    assert chunks[0] == {"type": "start", "messageId": "a1"}


async def test_reasoning_with_provider_data_becomes_provider_metadata() -> None:
    events = [ReasoningStart("r1"), ReasoningDelta("r1", "Hmm."), ReasoningEnd("r1", {"signature": "sig"})]
    chunks = await encode([*step(*events), RunFinished("stop")])
    assert chunks[2:5] == [
        {"type": "reasoning-start", "id": "r1"},
        {"type": "reasoning-delta", "id": "r1", "delta": "Hmm."},
        {"type": "reasoning-end", "id": "r1", "providerMetadata": {"chatgate": {"signature": "sig"}}},
    ]


async def test_a_tool_call_and_its_result() -> None:
    call = [
        ToolCallStart("c1", "add"),
        ToolCallDelta("c1", '{"a": 2,'),
        ToolCallDelta("c1", ' "b": 3}'),
        ToolCallEnd("c1", '{"a": 2, "b": 3}', {"id": "up-1"}),
    ]
    chunks = await encode([*step(*call, reason="tool_calls"), ToolResult("c1", "5"), RunFinished("stop")])
    assert chunks[2:6] == [
        {"type": "tool-input-start", "toolCallId": "c1", "toolName": "add"},
        {"type": "tool-input-delta", "toolCallId": "c1", "inputTextDelta": '{"a": 2,'},
        {"type": "tool-input-delta", "toolCallId": "c1", "inputTextDelta": ' "b": 3}'},
        {
            "type": "tool-input-available",
            "toolCallId": "c1",
            "toolName": "add",
            "input": {"a": 2, "b": 3},
            "providerMetadata": {"chatgate": {"id": "up-1"}},
        },
    ]
    assert chunks[6:8] == [  # inside the step, as the AI SDK's own server sends it
        {"type": "tool-output-available", "toolCallId": "c1", "output": "5"},
        {"type": "finish-step"},
    ]


async def test_a_failed_tool_result_is_a_tool_output_error() -> None:
    chunks = await encode([ToolResult("c1", "add failed: boom", is_error=True), RunFinished("stop")])
    assert chunks[1] == {"type": "tool-output-error", "toolCallId": "c1", "errorText": "add failed: boom"}


@pytest.mark.parametrize("arguments", ['{"a": 2, "b"', "[1, 2]"])
async def test_arguments_cut_off_end_the_call_in_a_tool_input_error(arguments: str) -> None:
    chunks = await encode([ToolCallStart("c1", "add"), ToolCallEnd("c1", arguments), RunFinished("tool_calls")])
    assert chunks[2] == {  # as the AI SDK's own server reports a call it could not parse
        "type": "tool-input-error",
        "toolCallId": "c1",
        "toolName": "add",
        "input": arguments,
        "errorText": "The model's tool arguments were cut off: they are not a complete JSON object.",
    }


@pytest.mark.parametrize(
    ("reason", "wire"),
    [
        ("stop", "stop"),
        ("length", "length"),
        ("tool_calls", "tool-calls"),
        ("content_filter", "content-filter"),
        ("other", "other"),
    ],
)
async def test_finish_reasons_use_the_sdk_names(reason: Any, wire: str) -> None:
    chunks = await encode([RunFinished(reason)])
    assert chunks[-1] == {"type": "finish", "finishReason": wire}


async def test_v5_finish_has_no_reason() -> None:
    chunks = await encode([RunFinished("tool_calls")], version="v5")
    assert chunks[-1] == {"type": "finish"}


@pytest.mark.parametrize("version", ["v6", "v7"])
async def test_v6_and_later_get_approval_requests_and_denials(version: str) -> None:
    chunks = await encode([ToolApprovalRequested("c1", "delete", "tok"), ToolDenied("c2"), RunFinished("tool_calls")])
    assert chunks[1:3] == [
        {"type": "tool-approval-request", "approvalId": "tok", "toolCallId": "c1"},
        {"type": "tool-output-denied", "toolCallId": "c2"},
    ]


async def test_v5_gets_approval_requests_and_denials_as_tool_errors() -> None:
    events = [ToolApprovalRequested("c1", "delete", "tok"), ToolDenied("c2"), RunFinished("tool_calls")]
    chunks = await encode(events, version="v5")
    assert types(chunks[1:3]) == ["tool-output-error", "tool-output-error"]
    assert "approval" in chunks[1]["errorText"]
    assert chunks[2]["errorText"] == "The user denied this tool call."


async def test_a_failure_closes_open_parts_then_errors_then_finishes() -> None:
    events = [
        StepStarted("model-call-1"),
        ReasoningStart("r1"),
        TextStart("t1"),
        TextDelta("t1", "Hi"),
        ToolCallStart("c1", "add"),
        RunFailed("The model failed.", code="model_error"),
    ]
    chunks = await encode(events)
    assert chunks[6:] == [
        {"type": "text-end", "id": "t1"},
        {"type": "reasoning-end", "id": "r1"},
        {"type": "tool-output-error", "toolCallId": "c1", "errorText": "The tool call was cut off."},
        {"type": "error", "errorText": "The model failed."},
        {"type": "finish-step"},
        {"type": "finish", "finishReason": "error"},
    ]


async def test_a_failure_outside_a_step_has_no_finish_step() -> None:
    chunks = await encode([RunFailed("The system prompt could not be prepared.")])
    assert types(chunks) == ["start", "error", "finish"]


async def test_nothing_after_the_terminal_event_is_sent() -> None:
    chunks = await encode([RunFinished("stop"), TextStart("late")])
    assert types(chunks) == ["start", "finish"]


async def test_events_that_raise_end_the_stream_masked_and_logged(caplog: pytest.LogCaptureFixture) -> None:
    async def broken() -> AsyncIterator[RunEvent]:
        yield StepStarted("model-call-1")
        yield TextStart("t1")
        raise RuntimeError("secret upstream detail")

    with caplog.at_level(logging.ERROR):
        stream = await encode_raw(broken())
    chunks = parse(stream)
    assert types(chunks)[-4:] == ["text-end", "error", "finish-step", "finish"]
    assert chunks[-3] == {"type": "error", "errorText": "An error occurred."}
    assert b"secret" not in stream
    assert "secret upstream detail" in caplog.text


async def test_events_that_stop_without_a_terminal_end_as_an_error(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.ERROR):
        chunks = await encode(step(*TEXT))
    assert types(chunks)[-3:] == ["error", "finish-step", "finish"]
    assert "without a terminal event" in caplog.text


async def test_a_delta_for_a_part_never_opened_ends_the_stream_in_protocol() -> None:
    chunks = await encode([TextDelta("nope", "x"), RunFinished("stop")])
    assert types(chunks) == ["start", "error", "finish"]


async def test_closing_the_stream_closes_the_run() -> None:
    closed = []

    async def run() -> AsyncIterator[RunEvent]:
        try:
            yield StepStarted("model-call-1")
            yield TextStart("t1")
        finally:
            closed.append(True)

    stream = protocol.encode(RUN, agent(), run())
    await stream.__anext__()  # start
    await stream.__anext__()  # start-step
    await stream.aclose()
    assert closed == [True]


def test_the_response_headers() -> None:
    assert dict(protocol.headers(agent())) == {
        "cache-control": "no-cache",
        "x-vercel-ai-ui-message-stream": "v1",
        "x-accel-buffering": "no",
    }


async def test_the_finish_carries_the_runs_usage_and_cost_in_every_version() -> None:
    usage = (ModelUsage("up", "m", 10, 4, reasoning_tokens=1, cached_input_tokens=6, cache_write_input_tokens=3),)
    for version in ("v5", "v6", "v7"):
        finish = (await encode([*step(*TEXT), RunFinished("stop", cost_usd=0.25, usage=usage)], version))[-1]
        assert finish["messageMetadata"] == {
            "usage": {
                "inputTokens": 10,
                "outputTokens": 4,
                "totalTokens": 14,
                "reasoningTokens": 1,
                "cachedInputTokens": 6,
                "cacheWriteInputTokens": 3,
            },
            "model": "m",
            "provider": "up",
            "costUsd": 0.25,
        }


async def test_a_failed_run_keeps_its_usage_and_only_v7_hears_of_an_interrupted_upstream() -> None:
    usage = (ModelUsage("up", "m", 5, 1),)
    cut = RunFailed("The model stream ended early.", "model_error", usage=usage, interrupted=True)
    v7 = await encode([*step(TextStart("t1"), TextDelta("t1", "Hal")), cut], "v7")
    # ai 7: the partial answer stands, no error chunk (as the AI SDK's providers end such a stream)
    assert [c["type"] for c in v7[-3:]] == ["text-end", "finish-step", "finish"]
    assert v7[-1]["finishReason"] == "interrupted" and v7[-1]["messageMetadata"]["usage"]["totalTokens"] == 6
    for version, reason in (("v5", None), ("v6", "error")):
        older = await encode([*step(TextStart("t1"), TextDelta("t1", "Hal")), cut], version)
        assert [c["type"] for c in older[-4:]] == ["text-end", "error", "finish-step", "finish"]
        assert older[-1].get("finishReason") == reason and older[-1]["messageMetadata"]["usage"]["inputTokens"] == 5


async def test_a_run_with_no_usage_reported_has_no_metadata() -> None:
    finish = (await encode([*step(*TEXT), RunFinished("stop")]))[-1]
    assert "messageMetadata" not in finish

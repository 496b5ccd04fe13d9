import json
import logging
from collections.abc import AsyncIterator, Iterable
from typing import Any

import pytest

from chatgate.adapters.ag_ui import protocol
from chatgate.adapters.ag_ui.snapshot import snapshot_messages
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
from chatgate.history import ActivityMessage, AssistantMessage, ReasoningPart, TextPart, UserMessage
from chatgate.run_input import RunInput
from tests.conftest import make_config

AGENT: AgentConfig = make_config({"a": {"model": "builtin:echo"}}).agents["a"]
RUN = RunInput(messages=(), thread_id="t1", run_id="r1")
TERMINALS = {"RUN_FINISHED", "RUN_ERROR"}


async def events_of(events: Iterable[RunEvent]) -> AsyncIterator[RunEvent]:
    for event in events:
        yield event


async def encode_raw(events: AsyncIterator[RunEvent]) -> bytes:
    return b"".join([chunk async for chunk in protocol.encode(RUN, AGENT, events)])


def parse(stream: bytes) -> list[dict[str, Any]]:
    """Every frame as JSON, checking the framing: LF only, one ``data:`` line per frame, no nulls."""
    assert b"\r" not in stream
    assert stream.endswith(b"\n\n")
    frames = []
    for frame in stream[:-2].split(b"\n\n"):
        assert frame.startswith(b"data: ")
        assert b"\n" not in frame
        frames.append(json.loads(frame[len(b"data: ") :]))
    assert "null" not in json.dumps(frames)
    return frames


async def encode(*events: RunEvent) -> list[dict[str, Any]]:
    return parse(await encode_raw(events_of(events)))


def types(frames: list[dict[str, Any]]) -> list[str]:
    return [frame["type"] for frame in frames]


async def test_a_plain_turn_maps_one_to_one() -> None:
    frames = await encode(
        StepStarted("model-call-1"),
        TextStart("m1"),
        TextDelta("m1", "Hel"),
        TextDelta("m1", 'lo "you"\n'),
        TextEnd("m1"),
        StepFinished("model-call-1", "stop"),
        RunFinished("stop"),
    )
    assert frames == [
        {"type": "RUN_STARTED", "threadId": "t1", "runId": "r1"},
        {"type": "STEP_STARTED", "stepName": "model-call-1"},
        {"type": "TEXT_MESSAGE_START", "messageId": "m1", "role": "assistant"},
        {"type": "TEXT_MESSAGE_CONTENT", "messageId": "m1", "delta": "Hel"},
        {"type": "TEXT_MESSAGE_CONTENT", "messageId": "m1", "delta": 'lo "you"\n'},
        {"type": "TEXT_MESSAGE_END", "messageId": "m1"},
        {"type": "STEP_FINISHED", "stepName": "model-call-1"},
        {"type": "RUN_FINISHED", "threadId": "t1", "runId": "r1"},
    ]


async def test_reasoning_opens_a_span_and_a_reasoning_message() -> None:
    frames = await encode(ReasoningStart("r1"), ReasoningDelta("r1", "Hmm"), ReasoningEnd("r1"), RunFinished("stop"))
    assert frames[1:-1] == [
        {"type": "REASONING_START", "messageId": "r1"},
        {"type": "REASONING_MESSAGE_START", "messageId": "r1", "role": "reasoning"},
        {"type": "REASONING_MESSAGE_CONTENT", "messageId": "r1", "delta": "Hmm"},
        {"type": "REASONING_MESSAGE_END", "messageId": "r1"},
        {"type": "REASONING_END", "messageId": "r1"},
    ]


async def test_reasoning_provider_data_leaves_as_an_encrypted_value_that_decodes_back() -> None:
    frames = await encode(ReasoningStart("r1"), ReasoningEnd("r1", {"signature": "sig-1"}), RunFinished("stop"))
    (encrypted,) = [frame for frame in frames if frame["type"] == "REASONING_ENCRYPTED_VALUE"]
    assert encrypted == {
        "type": "REASONING_ENCRYPTED_VALUE",
        "subtype": "message",
        "entityId": "r1",
        "encryptedValue": '{"signature":"sig-1"}',
    }
    assert types(frames).index("REASONING_ENCRYPTED_VALUE") < types(frames).index("REASONING_END")

    body = {"threadId": "t", "runId": "r", "messages": [{"id": "r1", "role": "reasoning", "content": "", **encrypted}]}
    (message,) = protocol.decode(json.dumps(body).encode()).messages
    assert message == AssistantMessage((ReasoningPart("", {"signature": "sig-1"}),), id="r1")


async def test_tool_call_provider_data_leaves_as_a_tool_call_encrypted_value() -> None:
    frames = await encode(
        ToolCallStart("c1", "f"), ToolCallEnd("c1", "{}", {"upstream_id": "toolu_1"}), RunFinished("tool_calls")
    )
    assert frames[3] == {
        "type": "REASONING_ENCRYPTED_VALUE",
        "subtype": "tool-call",
        "entityId": "c1",
        "encryptedValue": '{"upstream_id":"toolu_1"}',
    }


async def test_a_tool_call_after_text_in_the_same_step_names_that_text_as_its_parent() -> None:
    frames = await encode(
        StepStarted("s1"),
        TextStart("m1"),
        TextEnd("m1"),
        ToolCallStart("c1", "weather"),
        ToolCallDelta("c1", '{"city":'),
        ToolCallDelta("c1", '"Oslo"}'),
        ToolCallEnd("c1", '{"city":"Oslo"}'),
        StepFinished("s1", "tool_calls"),
        RunFinished("tool_calls"),
    )
    (start,) = [frame for frame in frames if frame["type"] == "TOOL_CALL_START"]
    assert start == {"type": "TOOL_CALL_START", "toolCallId": "c1", "toolCallName": "weather", "parentMessageId": "m1"}
    assert [frame["delta"] for frame in frames if frame["type"] == "TOOL_CALL_ARGS"] == ['{"city":', '"Oslo"}']


async def test_tool_calls_of_a_step_without_text_share_one_new_parent() -> None:
    frames = await encode(
        StepStarted("s1"),
        TextStart("m1"),
        TextEnd("m1"),
        StepFinished("s1", "tool_calls"),
        StepStarted("s2"),
        ToolCallStart("c1", "a"),
        ToolCallEnd("c1", "{}"),
        ToolCallStart("c2", "b"),
        ToolCallEnd("c2", "{}"),
        StepFinished("s2", "tool_calls"),
        RunFinished("tool_calls"),
    )
    parents = [frame["parentMessageId"] for frame in frames if frame["type"] == "TOOL_CALL_START"]
    assert parents[0] == parents[1] != "m1"


async def test_tool_results_and_denials_become_tool_call_results() -> None:
    frames = await encode(ToolResult("c1", "12 C"), ToolDenied("c2", "not now"), RunFinished("stop"))
    results = [frame for frame in frames if frame["type"] == "TOOL_CALL_RESULT"]
    assert [(r["toolCallId"], r["content"], r["role"]) for r in results] == [
        ("c1", "12 C", "tool"),
        ("c2", "Denied by the user: not now", "tool"),
    ]
    assert results[0]["messageId"] != results[1]["messageId"]


async def test_an_approval_request_finishes_the_run_with_an_interrupt() -> None:
    frames = await encode(
        ToolCallStart("c1", "delete"),
        ToolCallEnd("c1", "{}"),
        ToolApprovalRequested("c1", "delete", "tok"),
        RunFinished("tool_calls"),
    )
    assert frames[-1]["outcome"] == {
        "type": "interrupt",
        "interrupts": [
            {"id": "tok", "reason": "tool_approval", "toolCallId": "c1", "message": "Approve the call to delete?"}
        ],
    }


async def test_run_finished_carries_the_runs_usage_not_the_usage_events() -> None:
    # The runner sums usage (UsageTally); the encoder only renders the ending's.
    summed = (ModelUsage("builtin", "echo", 13, 6),)
    frames = await encode(Usage(3, 5), Usage(10, 1), RunFinished("stop", usage=summed))
    assert types(frames) == ["RUN_STARTED", "RUN_FINISHED"]
    assert frames[-1]["usage"] == [
        {"provider": "builtin", "model": "echo", "inputTokens": 13, "outputTokens": 6, "totalTokens": 19}
    ]
    assert "usage" not in (await encode(Usage(3, 5), RunFinished("stop")))[-1]


async def test_run_finished_carries_the_reported_details_and_the_runs_cost() -> None:
    usage = (ModelUsage("up", "m", 15, 6, reasoning_tokens=1, cached_input_tokens=7, cache_write_input_tokens=2),)
    frames = await encode(RunFinished("stop", cost_usd=0.5, usage=usage))
    assert frames[-1]["usage"] == [
        {
            "provider": "up",
            "model": "m",
            "inputTokens": 15,
            "outputTokens": 6,
            "totalTokens": 21,
            "reasoningTokens": 1,
            "cachedInputTokens": 7,
            "cacheWriteInputTokens": 2,
            "costUsd": 0.5,
        }
    ]


async def test_every_ending_carries_its_usage_and_a_wait_on_frontend_tools_names_them() -> None:
    usage = (ModelUsage("up", "m", 4, 1),)
    entry = {"provider": "up", "model": "m", "inputTokens": 4, "outputTokens": 1, "totalTokens": 5}
    failed = (await encode(RunFailed("The model failed.", "model_error", usage=usage)))[-1]
    assert failed == {"type": "RUN_ERROR", "message": "The model failed.", "code": "model_error", "usage": [entry]}
    cancelled = (await encode(RunFinished("other", stopped=True, usage=usage)))[-1]
    assert cancelled["outcome"] == {"type": "cancelled"} and cancelled["usage"] == [entry]
    ending = [RunFinished("tool_calls", pending_tool_call_ids=("c1", "c2"))]
    declared = RunInput(messages=(), thread_id="t1", run_id="r1", protocol_version="1.0")
    waiting = parse(await encode_raw_with(declared, ending))[-1]
    assert waiting["outcome"] == {"type": "success", "pendingToolCallIds": ["c1", "c2"]}
    # A client that declares no protocolVersion may be pre-1.0 (CopilotKit pins @ag-ui/core 0.0.59, whose
    # strict {type: "success"} rejects pendingToolCallIds): it gets the plain ending it always had.
    assert "outcome" not in (await encode(*ending))[-1]


async def test_a_failure_closes_everything_open_then_ends_with_run_error() -> None:
    frames = await encode(
        StepStarted("s1"),
        ReasoningStart("r1"),
        ReasoningDelta("r1", "so"),
        TextStart("m1"),
        TextDelta("m1", "Hi"),
        ToolCallStart("c1", "f"),
        RunFailed("The model failed.", "model_error"),
    )
    assert types(frames) == [
        "RUN_STARTED",
        "STEP_STARTED",
        "REASONING_START",
        "REASONING_MESSAGE_START",
        "REASONING_MESSAGE_CONTENT",
        "TEXT_MESSAGE_START",
        "TEXT_MESSAGE_CONTENT",
        "TOOL_CALL_START",
        "TOOL_CALL_END",
        "REASONING_MESSAGE_END",
        "REASONING_END",
        "TEXT_MESSAGE_END",
        "STEP_FINISHED",
        "RUN_ERROR",
    ]
    assert frames[-1] == {"type": "RUN_ERROR", "message": "The model failed.", "code": "model_error"}


async def test_a_raising_event_iterator_ends_with_run_error_and_is_logged(caplog: pytest.LogCaptureFixture) -> None:
    async def broken() -> AsyncIterator[RunEvent]:
        yield TextStart("m1")
        raise RuntimeError("secret detail")

    frames = parse(await encode_raw(broken()))
    assert types(frames) == ["RUN_STARTED", "TEXT_MESSAGE_START", "TEXT_MESSAGE_END", "RUN_ERROR"]
    assert frames[-1] == {"type": "RUN_ERROR", "message": "An internal error occurred.", "code": "internal_error"}
    assert "secret detail" in caplog.text
    assert "secret" not in json.dumps(frames)


async def test_a_stream_that_stops_without_a_terminal_event_ends_with_run_error(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.ERROR)
    frames = await encode(StepStarted("s1"), TextStart("m1"))
    assert types(frames) == [
        "RUN_STARTED",
        "STEP_STARTED",
        "TEXT_MESSAGE_START",
        "TEXT_MESSAGE_END",
        "STEP_FINISHED",
        "RUN_ERROR",
    ]
    assert frames[-1]["code"] == "incomplete_run"


async def test_nothing_follows_the_terminal_event() -> None:
    frames = await encode(RunFinished("stop"), TextStart("m1"), RunFailed("late"))
    assert types(frames) == ["RUN_STARTED", "RUN_FINISHED"]


async def test_the_event_iterator_is_closed_when_the_stream_ends() -> None:
    closed = []

    async def run() -> AsyncIterator[RunEvent]:
        try:
            yield RunFinished("stop")
            yield TextStart("never")
        finally:
            closed.append(True)

    await encode_raw(run())
    assert closed == [True]


def test_headers_forbid_caching_and_proxy_buffering() -> None:
    assert protocol.headers(AGENT) == {"cache-control": "no-cache", "x-accel-buffering": "no"}


def test_the_protocol_names_its_routes() -> None:
    assert (protocol.name, protocol.route, protocol.default_path) == ("ag-ui", "ag-ui", "/ag-ui")


async def test_run_started_names_the_parent_run_the_client_named() -> None:
    run = RunInput(messages=(), thread_id="t1", run_id="r2", parent_run_id="r1")
    (started, _finished) = parse(await encode_raw_with(run, [RunFinished("stop")]))
    assert started == {"type": "RUN_STARTED", "threadId": "t1", "runId": "r2", "parentRunId": "r1"}


async def encode_raw_with(run: RunInput, events: list[RunEvent]) -> bytes:
    return b"".join([chunk async for chunk in protocol.encode(run, AGENT, events_of(events))])


def test_a_snapshot_keeps_activity_messages_as_sent() -> None:
    history = (ActivityMessage("plan", {"steps": ["a"]}, id="act-1"), UserMessage((TextPart("hi"),), id="u1"))
    assert snapshot_messages(history) == [
        {"id": "act-1", "role": "activity", "activityType": "plan", "content": {"steps": ["a"]}},
        {"id": "u1", "role": "user", "content": "hi"},
    ]

"""A run's journal lines: every event comes back as it was, one line each, whatever its text."""

from __future__ import annotations

from chatgate.events import (
    ModelFinished,
    ModelUsage,
    ReasoningDelta,
    ReasoningEnd,
    ReasoningStart,
    RunEvent,
    RunFailed,
    RunFinished,
    StepFinished,
    StepRetracted,
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
from chatgate.history import AssistantMessage, TextPart, ToolMessage
from chatgate.threads.journal import decode_record, encode_event, encode_header
from chatgate.threads.recovery import fold_journal

EVENTS: list[RunEvent] = [
    StepStarted("model"),
    ReasoningStart("r1"),
    ReasoningDelta("r1", "think\nhard"),
    ReasoningEnd("r1", {"signature": "s"}),
    TextStart("t1"),
    TextDelta("t1", 'line one\nline "two" \u2028 é'),
    TextEnd("t1"),
    ToolCallStart("c1", "lookup"),
    ToolCallDelta("c1", '{"q":'),
    ToolCallEnd("c1", '{"q": 1}', None),
    Usage(3, 4, 1, 2, 1),
    ModelFinished("tool_calls"),
    StepFinished("model", "tool_calls"),
    ToolResult("c1", "found", False, {"rows": [1, 2]}),
    ToolApprovalRequested("c2", "delete", "token"),
    ToolDenied("c3", "no"),
    StepRetracted("model-call-2", "failover", "up:m", "interrupted"),
    RunFailed("boom", "model_error", (ModelUsage("up", "m", 3, 4),), interrupted=True),
    RunFinished("stop", stopped=True, usage=(ModelUsage("up", "m", 3, 4, 1, 2, 1),), pending_tool_call_ids=("c9",)),
]


def test_every_event_is_one_line_and_comes_back_equal() -> None:
    for event in EVENTS:
        line = encode_event(event)
        assert b"\n" not in line
        assert decode_record(line) == event
    assert decode_record(encode_header("m1")) == "m1" and decode_record(encode_header(None)) == ""
    assert decode_record(b"not json") is None and decode_record(b'["NoSuchEvent"]') is None


def test_a_journal_folds_into_the_turn_the_producer_saves() -> None:
    lines = [encode_header("m1"), *(encode_event(event) for event in EVENTS[:14])]
    turn, status = fold_journal(lines)
    assert status == "partial"  # no ending in the journal: the run was cut off
    assert isinstance(turn[0], AssistantMessage) and turn[0].id == "m1"
    assert turn[0].text == 'line one\nline "two" \u2028 é' and [c.name for c in turn[0].tool_calls] == ["lookup"]
    assert isinstance(turn[1], ToolMessage) and turn[1].content == "found"
    assert fold_journal([*lines, encode_event(RunFinished("stop"))])[1] == "complete"
    # An upstream that broke off leaves what it said as partial, like a cut-off run; another failure is an error.
    assert fold_journal([*lines, encode_event(RunFailed("x", "model_error", interrupted=True))])[1] == "partial"
    assert fold_journal([*lines, encode_event(RunFailed("x", "model_error"))])[1] == "error"


def test_a_retracted_step_folds_into_its_replacement_alone() -> None:
    step = [StepStarted("model-call-1"), TextStart("t1"), TextDelta("t1", "Hal")]
    withdrawn = StepRetracted("model-call-1", "failover", "up:m0", "interrupted", kept=(ToolMessage("c", "x"),))
    replacement = [TextStart("t2"), TextDelta("t2", "Hello"), TextEnd("t2"), StepFinished("model-call-1", "stop")]
    lines = [encode_header("m1"), *(encode_event(e) for e in [*step, withdrawn, *replacement, RunFinished("stop")])]
    assert decode_record(encode_event(withdrawn)) == withdrawn  # ``kept`` is the run's, never journaled
    turn, status = fold_journal(lines)
    assert status == "complete"
    assert turn == [
        AssistantMessage(
            (TextPart("Hello"),),
            id="m1",
            metadata={"retracted": [{"model": "up:m0", "reason": "failover", "failure": "interrupted"}]},
        )
    ]

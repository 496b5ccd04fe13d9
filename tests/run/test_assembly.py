from chatgate.events import (
    ModelFinished,
    ReasoningDelta,
    ReasoningEnd,
    ReasoningStart,
    RunEvent,
    TextDelta,
    TextEnd,
    TextStart,
    ToolCallDelta,
    ToolCallEnd,
    ToolCallStart,
    Usage,
)
from chatgate.history import AssistantMessage, ReasoningPart, TextPart, ToolCallPart
from chatgate.run.assembly import MessageAssembler


def assemble(events: list[RunEvent]) -> MessageAssembler:
    assembler = MessageAssembler("a1")
    for event in events:
        assembler.feed(event)
    return assembler


def test_events_fold_into_parts_in_the_order_they_opened() -> None:
    assembler = assemble(
        [
            ReasoningStart("r"),
            ReasoningDelta("r", "think"),
            ReasoningDelta("r", "ing"),
            ReasoningEnd("r", provider_data={"signature": "sig"}),
            TextStart("t"),
            TextDelta("t", "Hel"),
            TextDelta("t", "lo"),
            TextEnd("t"),
            ToolCallStart("c1", "get_weather"),
            ToolCallDelta("c1", '{"city":'),
            ToolCallDelta("c1", '"Oslo"}'),
            ToolCallEnd("c1", ""),
            Usage(1, 2),
            ModelFinished("tool_calls"),
        ]
    )
    assert assembler.message() == AssistantMessage(
        (
            ReasoningPart("thinking", provider_data={"signature": "sig"}),
            TextPart("Hello"),
            ToolCallPart("c1", "get_weather", '{"city":"Oslo"}'),
        ),
        id="a1",
    )


def test_the_whole_arguments_of_tool_call_end_win_over_fragments() -> None:
    assembler = assemble([ToolCallStart("c1", "f"), ToolCallDelta("c1", "{"), ToolCallEnd("c1", '{"x": 1}')])
    assert assembler.tool_calls == (ToolCallPart("c1", "f", '{"x": 1}'),)


def test_an_unfinished_tool_call_is_not_a_tool_call() -> None:
    assembler = assemble([TextStart("t"), TextDelta("t", "x"), ToolCallStart("c1", "f"), ToolCallDelta("c1", "{")])
    assert assembler.tool_calls == ()
    assert assembler.message().parts == (TextPart("x"),)

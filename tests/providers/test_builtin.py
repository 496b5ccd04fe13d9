import pytest

from chatgate.errors import ProviderError
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
from chatgate.history import AssistantMessage, SystemMessage, TextPart, ToolMessage, UserMessage
from chatgate.providers import ModelRequest
from chatgate.providers.builtin import EchoModel, echo_reply
from chatgate.run_input import ToolDefinition

HISTORY = (
    SystemMessage("You are terse."),
    UserMessage((TextPart("first"),)),
    AssistantMessage((TextPart("ok"),)),
    UserMessage((TextPart("second question"),)),
)


async def collect(request: ModelRequest) -> list[RunEvent]:
    return [event async for event in EchoModel().stream(request)]


def test_the_reply_states_the_system_prompt_and_the_last_user_message() -> None:
    reply = echo_reply(ModelRequest("echo", HISTORY))
    assert reply == "System prompt: You are terse.\nLast user message: second question"


def test_the_history_setting_lists_every_user_message() -> None:
    reply = echo_reply(ModelRequest("echo", HISTORY, settings={"history": True}))
    assert reply.endswith("\nLast user message: second question\nUser messages: first | second question")


def test_the_reply_says_when_there_is_no_system_prompt() -> None:
    assert echo_reply(ModelRequest("echo", HISTORY[1:])).startswith("System prompt: (none)\n")


async def test_the_reply_streams_word_by_word_and_reassembles_exactly() -> None:
    events = await collect(ModelRequest("echo", HISTORY))
    assert isinstance(events[0], TextStart)
    deltas = [e.delta for e in events if isinstance(e, TextDelta)]
    assert len(deltas) == 10
    assert "".join(deltas) == echo_reply(ModelRequest("echo", HISTORY))
    assert isinstance(events[-3], TextEnd)
    assert events[-2] == Usage(input_tokens=4, output_tokens=10)
    assert events[-1] == ModelFinished("stop")


async def test_reasoning_comes_first_when_asked_for() -> None:
    events = await collect(ModelRequest("echo", HISTORY, settings={"reasoning": True}))
    assert isinstance(events[0], ReasoningStart)
    reasoning = [e for e in events if isinstance(e, ReasoningDelta)]
    assert "".join(e.delta for e in reasoning) == "I will repeat what I was given."
    assert events.index(next(e for e in events if isinstance(e, ReasoningEnd))) < events.index(
        next(e for e in events if isinstance(e, TextStart))
    )


async def test_fail_after_raises_a_provider_error_mid_stream() -> None:
    events: list[RunEvent] = []
    with pytest.raises(ProviderError):
        async for event in EchoModel().stream(ModelRequest("echo", HISTORY, settings={"fail_after": 2})):
            events.append(event)
    assert [type(e) for e in events] == [TextStart, TextDelta, TextDelta]


async def test_an_unknown_builtin_model_is_refused() -> None:
    with pytest.raises(ProviderError):
        await collect(ModelRequest("parrot", HISTORY))


def test_after_tool_results_it_states_them() -> None:
    history = (*HISTORY, ToolMessage("c1", "21C"), ToolMessage("c2", "boom", is_error=True))
    assert echo_reply(ModelRequest("echo", history)) == "Tool results: c1 returned: 21C; c2 failed: boom"


async def test_slash_call_makes_it_call_an_offered_tool() -> None:
    ask = (UserMessage((TextPart('/call get_weather {"city": "Oslo"}'),)),)
    events = await collect(ModelRequest("echo", ask, tools=(ToolDefinition("get_weather"),)))
    start, delta, end, finished = events
    assert isinstance(start, ToolCallStart) and start.name == "get_weather"
    assert delta == ToolCallDelta(start.tool_call_id, '{"city": "Oslo"}')
    assert end == ToolCallEnd(start.tool_call_id, '{"city": "Oslo"}')
    assert finished == ModelFinished("tool_calls")


async def test_slash_call_of_a_tool_not_offered_is_just_echoed() -> None:
    events = await collect(ModelRequest("echo", (UserMessage((TextPart("/call nope {}"),)),)))
    assert events[-1] == ModelFinished("stop")

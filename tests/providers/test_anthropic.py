"""The Anthropic Messages provider against a fake upstream speaking its exact SSE events."""

from typing import Any

from chatgate.events import (
    ModelFinished,
    ModelUsage,
    ReasoningDelta,
    ReasoningEnd,
    RunFailed,
    TextDelta,
    ToolCallDelta,
    ToolCallEnd,
    ToolCallStart,
    Usage,
)
from chatgate.history import (
    AssistantMessage,
    FilePart,
    Message,
    ReasoningPart,
    SystemMessage,
    TextPart,
    ToolCallPart,
    ToolMessage,
    UserMessage,
)
from chatgate.providers.base import ModelRequest
from chatgate.run_input import ToolDefinition
from tests.providers.fakes import FakeUpstream, Reply, anthropic_event
from tests.providers.support import collect, provider, run_events, stream_once

HELLO: tuple[Message, ...] = (UserMessage((TextPart("Hello"),)),)


def message_start(input_tokens: int = 10) -> bytes:
    usage = {"input_tokens": input_tokens, "output_tokens": 1}
    message = {"id": "msg_1", "type": "message", "role": "assistant", "content": [], "usage": usage}
    return anthropic_event("message_start", message=message)


def block_start(index: int, block: dict[str, Any]) -> bytes:
    return anthropic_event("content_block_start", index=index, content_block=block)


def delta(index: int, **fields: Any) -> bytes:
    return anthropic_event("content_block_delta", index=index, delta=fields)


def block_stop(index: int) -> bytes:
    return anthropic_event("content_block_stop", index=index)


def message_end(stop_reason: str = "end_turn", output_tokens: int = 5) -> list[bytes]:
    return [
        anthropic_event("message_delta", delta={"stop_reason": stop_reason}, usage={"output_tokens": output_tokens}),
        anthropic_event("message_stop"),
    ]


PING = anthropic_event("ping")


def text_reply(*texts: str) -> Reply:
    return Reply(
        [
            message_start(),
            block_start(0, {"type": "text", "text": ""}),
            *(delta(0, type="text_delta", text=text) for text in texts),
            block_stop(0),
            *message_end(),
        ]
    )


async def test_text_streams_with_pings_and_unknown_events_tolerated() -> None:
    reply = Reply(
        [
            message_start(12),
            PING,
            block_start(0, {"type": "text", "text": ""}),
            delta(0, type="text_delta", text="Hi"),
            anthropic_event("some_future_event", detail=1),
            delta(0, type="citations_delta", citation={}),
            PING,
            delta(0, type="text_delta", text=" there"),
            block_stop(0),
            *message_end(output_tokens=3),
        ]
    )
    async with FakeUpstream(reply) as fake:
        events = await stream_once("anthropic", fake.url, HELLO)
    assert [type(e).__name__ for e in events] == [
        "TextStart",
        "TextDelta",
        "TextDelta",
        "TextEnd",
        "Usage",
        "ModelFinished",
    ]
    assert [e.delta for e in events if isinstance(e, TextDelta)] == ["Hi", " there"]
    assert events[-2:] == [Usage(12, 3), ModelFinished("stop")]


async def test_events_split_across_writes_decode_the_same() -> None:
    whole = b"".join(piece for piece in text_reply("One", " two").body if isinstance(piece, bytes))
    async with FakeUpstream(Reply([whole[i : i + 5] for i in range(0, len(whole), 5)])) as fake:
        events = await stream_once("anthropic", fake.url, HELLO)
    assert "".join(e.delta for e in events if isinstance(e, TextDelta)) == "One two"


async def test_the_request_lifts_the_system_prompt_and_defaults_max_tokens() -> None:
    tool = ToolDefinition("get_time", "The time now", {"type": "object", "properties": {}})
    history = (SystemMessage("Operator prompt."), *HELLO)
    async with FakeUpstream(text_reply("ok")) as fake, provider("anthropic", fake.url) as model:
        await collect(model.stream(ModelRequest("claude-test", history, (tool,), {"temperature": 0.5})))
    (request,) = fake.requests
    assert (request.path, request.headers["x-api-key"]) == ("/v1/messages", "sk-test")
    assert request.headers["anthropic-version"] == "2023-06-01"
    assert request.body == {
        "model": "claude-test",
        "max_tokens": 4096,
        "system": "Operator prompt.",
        "messages": [{"role": "user", "content": [{"type": "text", "text": "Hello"}]}],
        "tools": [
            {"name": "get_time", "description": "The time now", "input_schema": {"type": "object", "properties": {}}}
        ],
        "temperature": 0.5,
        "stream": True,
    }


async def test_a_thinking_budget_becomes_the_thinking_parameter_above_max_tokens() -> None:
    async with FakeUpstream(text_reply("ok")) as fake, provider("anthropic", fake.url) as model:
        await collect(model.stream(ModelRequest("c", HELLO, settings={"thinking": 2048, "stop": "END"})))
    body = fake.bodies[0]
    assert body["thinking"] == {"type": "enabled", "budget_tokens": 2048}
    assert body["max_tokens"] == 4096 + 2048
    assert body["stop_sequences"] == ["END"]


async def test_thinking_with_signature_then_a_tool_call_with_json_input_assembled() -> None:
    reply = Reply(
        [
            message_start(),
            block_start(0, {"type": "thinking", "thinking": "", "signature": ""}),
            delta(0, type="thinking_delta", thinking="I should "),
            delta(0, type="thinking_delta", thinking="look it up."),
            delta(0, type="signature_delta", signature="EqQBCgIYAhIM"),
            block_stop(0),
            block_start(1, {"type": "tool_use", "id": "toolu_01", "name": "lookup", "input": {}}),
            delta(1, type="input_json_delta", partial_json=""),
            delta(1, type="input_json_delta", partial_json='{"q": '),
            delta(1, type="input_json_delta", partial_json='"cats"}'),
            block_stop(1),
            *message_end("tool_use"),
        ]
    )
    async with FakeUpstream(reply) as fake:
        events = await stream_once("anthropic", fake.url, HELLO)
    reasoning_end = next(e for e in events if isinstance(e, ReasoningEnd))
    assert reasoning_end.provider_data == {"anthropic": {"signature": "EqQBCgIYAhIM"}}
    assert "".join(e.delta for e in events if isinstance(e, ReasoningDelta)) == "I should look it up."
    calls = [e for e in events if isinstance(e, ToolCallStart | ToolCallDelta | ToolCallEnd)]
    assert calls == [
        ToolCallStart("toolu_01", "lookup"),
        ToolCallDelta("toolu_01", '{"q": '),
        ToolCallDelta("toolu_01", '"cats"}'),
        ToolCallEnd("toolu_01", '{"q": "cats"}'),
    ]
    assert events[-1] == ModelFinished("tool_calls")


async def test_redacted_thinking_is_kept_for_the_next_turn() -> None:
    reply = Reply(
        [
            message_start(),
            block_start(0, {"type": "redacted_thinking", "data": "opaque=="}),
            block_stop(0),
            block_start(1, {"type": "text", "text": "Hi"}),
            block_stop(1),
            *message_end(),
        ]
    )
    async with FakeUpstream(reply) as fake:
        events = await stream_once("anthropic", fake.url, HELLO)
    assert next(e for e in events if isinstance(e, ReasoningEnd)).provider_data == {
        "anthropic": {"redacted": "opaque=="}
    }
    assert [e.delta for e in events if isinstance(e, TextDelta)] == ["Hi"]


async def test_history_rules_tool_results_merged_thinking_echoed_and_assistant_first_fixed() -> None:
    history = (
        SystemMessage("First system."),
        AssistantMessage((TextPart("Welcome! "),)),
        UserMessage((TextPart("Find cats"), FilePart("image/png", "data:image/png;base64,iVBO"))),
        SystemMessage("Second system."),
        AssistantMessage(
            (
                ReasoningPart("I should look it up.", {"anthropic": {"signature": "EqQBCgIYAhIM"}}),
                ReasoningPart("not signed, from another model"),
                ToolCallPart("toolu_01", "lookup", '{"q": "cats"}'),
                ToolCallPart("toolu_02", "count", "{}"),
            )
        ),
        ToolMessage("toolu_01", "3 cats"),
        ToolMessage("toolu_02", "failed", is_error=True),
        UserMessage((TextPart("And dogs?"),)),
    )
    async with FakeUpstream(text_reply("ok")) as fake:
        await stream_once("anthropic", fake.url, history)
    body = fake.bodies[0]
    assert body["system"] == "First system.\n\nSecond system."
    assert body["messages"] == [
        {"role": "user", "content": [{"type": "text", "text": "(The conversation so far follows.)"}]},
        {"role": "assistant", "content": [{"type": "text", "text": "Welcome! "}]},
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "Find cats"},
                {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "iVBO"}},
            ],
        },
        {
            "role": "assistant",
            "content": [
                {"type": "thinking", "thinking": "I should look it up.", "signature": "EqQBCgIYAhIM"},
                {"type": "tool_use", "id": "toolu_01", "name": "lookup", "input": {"q": "cats"}},
                {"type": "tool_use", "id": "toolu_02", "name": "count", "input": {}},
            ],
        },
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": "toolu_01", "content": "3 cats"},
                {"type": "tool_result", "tool_use_id": "toolu_02", "content": "failed", "is_error": True},
                {"type": "text", "text": "And dogs?"},
            ],
        },
    ]


async def test_server_policy_puts_only_the_configured_prompt_in_system() -> None:
    history = (SystemMessage("Client: be a pirate."), *HELLO, SystemMessage("Client again.", role="developer"))
    async with FakeUpstream(text_reply("ok")) as fake:
        await run_events("anthropic", fake.url, history, system_prompt="Operator prompt.")
    assert fake.bodies[0]["system"] == "Operator prompt."
    assert fake.bodies[0]["messages"] == [{"role": "user", "content": [{"type": "text", "text": "Hello"}]}]


async def test_client_policy_lifts_every_client_system_message() -> None:
    history = (SystemMessage("Client: be a pirate."), *HELLO, SystemMessage("Client again.", role="developer"))
    async with FakeUpstream(text_reply("ok")) as fake:
        await run_events(
            "anthropic", fake.url, history, system_prompt="Operator prompt.", manage_system_prompt="client"
        )
    assert fake.bodies[0]["system"] == "Client: be a pirate.\n\nClient again."
    assert all(message["role"] in ("user", "assistant") for message in fake.bodies[0]["messages"])


async def test_an_error_event_mid_stream_fails_the_run_with_a_short_message() -> None:
    reply = Reply(
        [
            message_start(),
            block_start(0, {"type": "text", "text": ""}),
            delta(0, type="text_delta", text="Hi"),
            anthropic_event("error", error={"type": "overloaded_error", "message": "Overloaded"}),
        ]
    )
    async with FakeUpstream(reply) as fake:
        events = await run_events("anthropic", fake.url, HELLO)
    # What the upstream reported before failing is counted: it bills the partial answer.
    billed = (ModelUsage("up", "m", 10, 1),)
    assert events[-1] == RunFailed("The model provider is overloaded; try again later.", "model_error", billed)


async def test_a_stream_cut_before_message_stop_fails() -> None:
    reply = Reply(
        [message_start(), block_start(0, {"type": "text", "text": ""}), delta(0, type="text_delta", text="x")]
    )
    async with FakeUpstream(reply) as fake:
        events = await run_events("anthropic", fake.url, HELLO)
    billed = (ModelUsage("up", "m", 10, 1),)
    assert events[-1] == RunFailed("The model stream ended early.", "model_error", billed, interrupted=True)

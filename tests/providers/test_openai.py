"""The OpenAI Chat Completions provider against a fake upstream speaking its exact wire format."""

import base64
from typing import Any

import pytest

from chatgate.errors import ProviderError
from chatgate.events import (
    ModelFinished,
    ReasoningDelta,
    ReasoningEnd,
    ReasoningStart,
    RunFailed,
    RunFinished,
    StepFinished,
    StepStarted,
    TextDelta,
    TextEnd,
    TextStart,
    ToolCallDelta,
    ToolCallEnd,
    ToolCallStart,
    Usage,
)
from chatgate.history import (
    AssistantMessage,
    FilePart,
    ReasoningPart,
    SystemMessage,
    TextPart,
    ToolCallPart,
    ToolMessage,
    UserMessage,
)
from chatgate.providers.base import ModelRequest
from chatgate.run_input import ToolDefinition
from tests.providers.fakes import FakeUpstream, Reply, openai_chunk, openai_usage
from tests.providers.support import collect, provider, run_events, stream_once

HELLO = (UserMessage((TextPart("Hello"),)),)
DONE = b"data: [DONE]\n\n"


def answer(*frames: bytes) -> Reply:
    return Reply(list(frames))


def kinds(events: list[Any]) -> list[str]:
    return [type(event).__name__ for event in events]


async def test_text_streams_with_usage_and_finish() -> None:
    reply = answer(
        openai_chunk({"role": "assistant", "content": ""}),
        openai_chunk({"content": "Hel"}),
        openai_chunk({"content": "lo"}),
        openai_chunk({}, "stop"),
        openai_usage(7, 2),
        DONE,
    )
    async with FakeUpstream(reply) as fake:
        events = await stream_once("openai", fake.url + "/v1", HELLO)
    text_id = events[0].id  # type: ignore[union-attr]
    assert events == [
        TextStart(text_id),
        TextDelta(text_id, "Hel"),
        TextDelta(text_id, "lo"),
        TextEnd(text_id),
        Usage(7, 2),
        ModelFinished("stop"),
    ]


async def test_the_request_goes_to_chat_completions_with_the_key_and_exact_body() -> None:
    tool = ToolDefinition("get_time", "The time now", {"type": "object", "properties": {"zone": {"type": "string"}}})
    async with FakeUpstream(answer(openai_chunk({}, "stop"), DONE)) as fake, provider("openai", fake.url + "/v1") as m:
        settings = {"temperature": 0.2, "max_tokens": 50, "extra_body": {"top_k": 3}}
        await collect(m.stream(ModelRequest("gpt-test", HELLO, (tool,), settings)))
    (request,) = fake.requests
    assert (request.method, request.path) == ("POST", "/v1/chat/completions")
    assert request.headers["authorization"] == "Bearer sk-test"
    assert request.body == {
        "model": "gpt-test",
        "messages": [{"role": "user", "content": "Hello"}],
        "stream": True,
        "stream_options": {"include_usage": True},
        "tools": [
            {
                "type": "function",
                "function": {
                    "name": "get_time",
                    "description": "The time now",
                    "parameters": {"type": "object", "properties": {"zone": {"type": "string"}}},
                },
            }
        ],
        "temperature": 0.2,
        "max_tokens": 50,
        "top_k": 3,
    }


async def test_frames_split_anywhere_across_writes_and_crlf_lines_decode_the_same() -> None:
    whole = openai_chunk({"content": "Hi there"}) + openai_chunk({}, "stop").replace(b"\n", b"\r\n") + DONE
    pieces: list[bytes | float] = [whole[i : i + 7] for i in range(0, len(whole), 7)]
    async with FakeUpstream(Reply(pieces)) as fake:
        events = await stream_once("openai", fake.url, HELLO)
    assert [e.delta for e in events if isinstance(e, TextDelta)] == ["Hi there"]
    assert events[-1] == ModelFinished("stop")


async def test_reasoning_from_reasoning_content_or_reasoning_closes_before_the_text() -> None:
    reply = answer(
        openai_chunk({"reasoning_content": "Let me "}),
        openai_chunk({"reasoning": "think."}),
        openai_chunk({"content": "Done."}),
        openai_chunk({}, "stop"),
        DONE,
    )
    async with FakeUpstream(reply) as fake:
        events = await stream_once("openai", fake.url, HELLO)
    assert kinds(events) == [
        "ReasoningStart",
        "ReasoningDelta",
        "ReasoningDelta",
        "ReasoningEnd",
        "TextStart",
        "TextDelta",
        "TextEnd",
        "ModelFinished",
    ]
    assert "".join(e.delta for e in events if isinstance(e, ReasoningDelta)) == "Let me think."
    assert isinstance(events[0], ReasoningStart) and isinstance(events[3], ReasoningEnd)


async def test_tool_call_fragments_are_assembled_by_index() -> None:
    def fragment(index: int, **fields: Any) -> bytes:
        return openai_chunk({"tool_calls": [{"index": index, **fields}]})

    reply = answer(
        openai_chunk({"content": "Checking."}),
        fragment(0, id="call_a", type="function", function={"name": "get_time", "arguments": ""}),
        fragment(0, function={"arguments": '{"zone":'}),
        fragment(0, function={"arguments": ' "UTC"}'}),
        fragment(1, id="call_b", type="function", function={"name": "get_date", "arguments": "{}"}),
        openai_chunk({}, "tool_calls"),
        openai_usage(10, 5),
        DONE,
    )
    async with FakeUpstream(reply) as fake:
        events = await stream_once("openai", fake.url, HELLO)
    calls = [e for e in events if isinstance(e, ToolCallStart | ToolCallDelta | ToolCallEnd)]
    assert calls == [
        ToolCallStart("call_a", "get_time"),
        ToolCallDelta("call_a", '{"zone":'),
        ToolCallDelta("call_a", ' "UTC"}'),
        ToolCallStart("call_b", "get_date"),
        ToolCallDelta("call_b", "{}"),
        ToolCallEnd("call_a", '{"zone": "UTC"}'),
        ToolCallEnd("call_b", "{}"),
    ]
    assert kinds(events).index("TextEnd") < kinds(events).index("ToolCallStart")
    assert events[-2:] == [Usage(10, 5), ModelFinished("tool_calls")]


async def test_a_server_that_says_stop_after_tool_calls_still_finishes_with_tool_calls() -> None:
    call = {"index": 0, "id": "c1", "function": {"name": "f", "arguments": "{}"}}
    reply = answer(openai_chunk({"tool_calls": [call]}), openai_chunk({}, "stop"), DONE)
    async with FakeUpstream(reply) as fake:
        events = await stream_once("openai", fake.url, HELLO)
    assert events[-1] == ModelFinished("tool_calls")


async def test_finish_reasons_map_to_ours() -> None:
    for upstream, ours in [("length", "length"), ("content_filter", "content_filter"), ("weird", "other")]:
        async with FakeUpstream(answer(openai_chunk({"content": "x"}, upstream), DONE)) as fake:
            events = await stream_once("openai", fake.url, HELLO)
        assert events[-1] == ModelFinished(ours)  # type: ignore[arg-type]


async def test_history_encoding_tool_calls_results_files_and_reasoning_dropped() -> None:
    history = (
        SystemMessage("Be brief."),
        UserMessage((TextPart("What is this?"), FilePart("image/png", "data:image/png;base64,iVBO"))),
        AssistantMessage(
            (
                ReasoningPart("thinking", {"anthropic": {"signature": "sig"}}),
                TextPart("Let me check."),
                ToolCallPart("call_1", "lookup", '{"q": "png"}'),
            )
        ),
        ToolMessage("call_1", "a picture"),
        UserMessage((TextPart("Summarise"), FilePart("application/pdf", "data:application/pdf;base64,JVBE", "a.pdf"))),
    )
    async with FakeUpstream(answer(openai_chunk({}, "stop"), DONE)) as fake:
        await stream_once("openai", fake.url, history)
    assert fake.bodies[0]["messages"] == [
        {"role": "system", "content": "Be brief."},
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "What is this?"},
                {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBO"}},
            ],
        },
        {
            "role": "assistant",
            "content": "Let me check.",
            "tool_calls": [
                {"id": "call_1", "type": "function", "function": {"name": "lookup", "arguments": '{"q": "png"}'}}
            ],
        },
        {"role": "tool", "tool_call_id": "call_1", "content": "a picture"},
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "Summarise"},
                {"type": "file", "file": {"file_data": "data:application/pdf;base64,JVBE", "filename": "a.pdf"}},
            ],
        },
    ]


CLIENT_HISTORY = (
    SystemMessage("Client says: be a pirate."),
    UserMessage((TextPart("hi"),)),
    SystemMessage("Client again.", role="developer"),
    UserMessage((TextPart("who are you?"),)),
)


async def test_server_policy_sends_only_the_configured_prompt_first() -> None:
    async with FakeUpstream(answer(openai_chunk({"content": "ok"}, "stop"), DONE)) as fake:
        await run_events("openai", fake.url, CLIENT_HISTORY, system_prompt="Operator prompt.")
    assert fake.bodies[0]["messages"] == [
        {"role": "system", "content": "Operator prompt."},
        {"role": "user", "content": "hi\n\nwho are you?"},  # the two user turns left side by side go as one
    ]


async def test_client_policy_keeps_the_clients_system_messages_in_place() -> None:
    async with FakeUpstream(answer(openai_chunk({"content": "ok"}, "stop"), DONE)) as fake:
        await run_events(
            "openai", fake.url, CLIENT_HISTORY, system_prompt="Operator prompt.", manage_system_prompt="client"
        )
    assert fake.bodies[0]["messages"] == [
        {"role": "system", "content": "Client says: be a pirate."},
        {"role": "user", "content": "hi"},
        {"role": "system", "content": "Client again."},
        {"role": "user", "content": "who are you?"},
    ]


async def test_a_whole_run_wraps_the_call_in_a_step_and_finishes() -> None:
    async with FakeUpstream(answer(openai_chunk({"content": "ok"}), openai_chunk({}, "stop"), DONE)) as fake:
        events = await run_events("openai", fake.url, HELLO)
    assert isinstance(events[0], StepStarted)
    assert events[-2:] == [StepFinished("model-call-1", "stop"), RunFinished("stop")]


async def test_an_error_object_mid_stream_fails_the_run_without_leaking_it() -> None:
    reply = answer(
        openai_chunk({"content": "partial"}),
        b'data: {"error": {"message": "internal secret detail", "code": 500}}\n\n',
    )
    async with FakeUpstream(reply) as fake:
        events = await run_events("openai", fake.url, HELLO)
    assert events[-1] == RunFailed("The model failed.", code="model_error")
    assert "secret" not in repr(events)


async def test_a_stream_that_stops_before_finishing_fails() -> None:
    async with FakeUpstream(answer(openai_chunk({"content": "partial"}))) as fake:
        events = await run_events("openai", fake.url, HELLO)
    assert events[-1] == RunFailed("The model stream ended early.", code="model_error", interrupted=True)


async def test_a_chunk_that_is_not_json_fails_the_run() -> None:
    async with FakeUpstream(answer(openai_chunk({"content": "a"}), b"data: {not json\n\n")) as fake:
        events = await run_events("openai", fake.url, HELLO)
    assert events[-1] == RunFailed("The model stream was interrupted.", code="model_error", interrupted=True)


async def test_files_take_the_form_the_api_has_for_them() -> None:
    note = "data:text/plain;base64," + base64.b64encode(b"remember the milk").decode()
    ask = UserMessage(
        (
            TextPart("Here:"),
            FilePart("image/jpeg", "https://example.com/cat.jpg"),
            FilePart("audio/wav", "data:audio/wav;base64,UklGRg=="),
            FilePart("text/plain", note, "notes.txt"),
        )
    )
    async with FakeUpstream(answer(openai_chunk({}, "stop"), DONE)) as fake:
        await stream_once("openai", fake.url, (ask,))
    assert fake.bodies[0]["messages"][0]["content"] == [
        {"type": "text", "text": "Here:"},
        {"type": "image_url", "image_url": {"url": "https://example.com/cat.jpg"}},
        {"type": "input_audio", "input_audio": {"data": "UklGRg==", "format": "wav"}},
        {"type": "text", "text": "notes.txt:\nremember the milk"},
    ]


@pytest.mark.parametrize(
    "part",
    [
        FilePart("application/zip", "data:application/zip;base64,UEsD", "a.zip"),
        FilePart("application/pdf", "https://example.com/a.pdf"),
    ],
)
async def test_a_file_the_api_cannot_take_fails_clearly_before_any_request(part: FilePart) -> None:
    async with FakeUpstream(answer(openai_chunk({}, "stop"), DONE)) as fake:
        with pytest.raises(ProviderError) as caught:
            await stream_once("openai", fake.url, (UserMessage((part,)),))
    assert caught.value.public_message.startswith(f"This model cannot read {part.media_type} files")
    assert fake.bodies == []


async def test_images_from_tool_results_follow_the_steps_tool_messages_in_one_user_message() -> None:
    # A tool message holds text only: both calls' results first, then their images, then the next turn.
    png, gif = FilePart("image/png", "data:image/png;base64,iVBO"), FilePart("image/gif", "data:image/gif;base64,R0lG")
    calls = (ToolCallPart("call_1", "shot", "{}"), ToolCallPart("call_2", "shot", "{}"))
    history = (
        UserMessage((TextPart("Look"),)),
        AssistantMessage(calls),
        ToolMessage("call_1", "[image: image/png, 3 bytes]", images=(png,)),
        ToolMessage("call_2", "[image: image/gif, 3 bytes]", images=(gif,)),
    )
    async with FakeUpstream(answer(openai_chunk({}, "stop"), DONE)) as fake:
        await stream_once("openai", fake.url, history)
    messages = fake.bodies[0]["messages"]
    assert [m["role"] for m in messages] == ["user", "assistant", "tool", "tool", "user"]
    assert messages[-1]["content"] == [
        {"type": "text", "text": "The images tool call call_1 returned:"},
        {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBO"}},
        {"type": "text", "text": "The images tool call call_2 returned:"},
        {"type": "image_url", "image_url": {"url": "data:image/gif;base64,R0lG"}},
    ]

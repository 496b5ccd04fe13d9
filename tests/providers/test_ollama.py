"""The Ollama provider against a fake upstream streaming NDJSON from /api/chat."""

from typing import Any

from chatgate.events import ModelFinished, ReasoningDelta, RunFailed, TextDelta, ToolCallEnd, ToolCallStart, Usage
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
from tests.providers.fakes import FakeUpstream, Reply, ndjson
from tests.providers.support import collect, provider, run_events, stream_once

HELLO = (UserMessage((TextPart("Hello"),)),)
NDJSON = {"content-type": "application/x-ndjson"}


def line(content: str = "", **message: Any) -> bytes:
    return ndjson({"model": "m", "message": {"role": "assistant", "content": content, **message}, "done": False})


def done(reason: str = "stop", prompt: int = 9, output: int = 4) -> bytes:
    return ndjson(
        {
            "model": "m",
            "message": {"role": "assistant", "content": ""},
            "done": True,
            "done_reason": reason,
            "prompt_eval_count": prompt,
            "eval_count": output,
        }
    )


def reply(*lines: bytes) -> Reply:
    return Reply(list(lines), headers=NDJSON)


async def test_thinking_then_text_with_the_done_lines_counts_as_usage() -> None:
    whole = line(thinking="Hmm, ") + line(thinking="easy.") + line("Hi") + line(" there") + done()
    async with FakeUpstream(Reply([whole[i : i + 11] for i in range(0, len(whole), 11)], headers=NDJSON)) as fake:
        events = await stream_once("ollama", fake.url, HELLO)
    assert [type(e).__name__ for e in events] == [
        "ReasoningStart",
        "ReasoningDelta",
        "ReasoningDelta",
        "ReasoningEnd",
        "TextStart",
        "TextDelta",
        "TextDelta",
        "TextEnd",
        "Usage",
        "ModelFinished",
    ]
    assert "".join(e.delta for e in events if isinstance(e, ReasoningDelta)) == "Hmm, easy."
    assert "".join(e.delta for e in events if isinstance(e, TextDelta)) == "Hi there"
    assert events[-2:] == [Usage(9, 4), ModelFinished("stop")]


async def test_whole_tool_calls_with_object_arguments() -> None:
    call = {"function": {"name": "get_weather", "arguments": {"city": "Paris"}}}
    async with FakeUpstream(reply(line(tool_calls=[call]), done())) as fake:
        events = await stream_once("ollama", fake.url, HELLO)
    start = next(e for e in events if isinstance(e, ToolCallStart))
    assert start.name == "get_weather"
    assert next(e for e in events if isinstance(e, ToolCallEnd)) == ToolCallEnd(start.tool_call_id, '{"city":"Paris"}')
    assert events[-1] == ModelFinished("tool_calls")


async def test_the_request_body_maps_settings_to_options_think_and_images() -> None:
    tool = ToolDefinition("get_weather", "Weather", {"type": "object", "properties": {}})
    history = (
        SystemMessage("Be brief."),
        UserMessage((TextPart("Look"), FilePart("image/png", "data:image/png;base64,iVBO"))),
        AssistantMessage(
            (ReasoningPart("hmm"), TextPart("Sure."), ToolCallPart("c1", "get_weather", '{"city": "Oslo"}'))
        ),
        ToolMessage("c1", "rain"),
    )
    settings = {"temperature": 0.1, "max_tokens": 64, "num_ctx": 8192, "think": True, "keep_alive": "5m"}
    async with FakeUpstream(reply(done())) as fake, provider("ollama", fake.url) as model:
        await collect(model.stream(ModelRequest("qwen3:8b", history, (tool,), settings)))
    (request,) = fake.requests
    assert request.path == "/api/chat"
    assert request.body == {
        "model": "qwen3:8b",
        "messages": [
            {"role": "system", "content": "Be brief."},
            {"role": "user", "content": "Look", "images": ["iVBO"]},
            {
                "role": "assistant",
                "content": "Sure.",
                "thinking": "hmm",
                "tool_calls": [{"function": {"name": "get_weather", "arguments": {"city": "Oslo"}}}],
            },
            {"role": "tool", "content": "rain", "tool_name": "get_weather"},
        ],
        "stream": True,
        "tools": [
            {
                "type": "function",
                "function": {
                    "name": "get_weather",
                    "description": "Weather",
                    "parameters": {"type": "object", "properties": {}},
                },
            }
        ],
        "think": True,
        "keep_alive": "5m",
        "options": {"temperature": 0.1, "num_predict": 64, "num_ctx": 8192},
    }


async def test_server_policy_sends_the_configured_prompt_as_the_first_system_message() -> None:
    history = (*HELLO, SystemMessage("Client: be a pirate."))
    async with FakeUpstream(reply(line("ok"), done())) as fake:
        await run_events("ollama", fake.url, history, system_prompt="Operator prompt.")
    assert fake.bodies[0]["messages"] == [
        {"role": "system", "content": "Operator prompt."},
        {"role": "user", "content": "Hello"},
    ]


async def test_an_error_line_mid_stream_fails_the_run() -> None:
    async with FakeUpstream(reply(line("Hi"), ndjson({"error": "model runner crashed at 0x7f"}))) as fake:
        events = await run_events("ollama", fake.url, HELLO)
    assert events[-1] == RunFailed("The model failed.", code="model_error")
    assert "0x7f" not in repr(events)


async def test_a_stream_without_its_done_line_fails() -> None:
    async with FakeUpstream(reply(line("Hi"))) as fake:
        events = await run_events("ollama", fake.url, HELLO)
    assert events[-1] == RunFailed("The model stream ended early.", code="model_error", interrupted=True)


async def test_an_unknown_model_404_is_a_short_rejection() -> None:
    missing = Reply(
        [ndjson({"error": "model 'nope' not found"})], status=404, headers={"content-type": "application/json"}
    )
    async with FakeUpstream(missing) as fake:
        events = await run_events("ollama", fake.url, HELLO)
    assert events[-1] == RunFailed("The model provider rejected the request.", code="model_error")

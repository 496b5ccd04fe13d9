"""Tool calls and their results, from each provider's wire format through chatgate and back upstream.

A server tool: the fake's first answer calls it in the provider's own format, chatgate runs it, and the
second upstream request carries the call and its result as that API wants them (OpenAI
``assistant.tool_calls`` and a ``tool`` message; Anthropic ``tool_use`` then a user turn of
``tool_result`` blocks; Ollama ``tool_calls`` and a ``tool`` message naming the tool). A frontend tool:
the result the client sends back (an AG-UI ``tool`` message, a useChat ``output-available`` part) goes
upstream in the same forms.
"""

from typing import Any

import pytest

from tests.providers.fakes import Reply, anthropic_event, fake_in_thread, ndjson, openai_chunk, text_reply
from tests.providers.test_ui_clients import DONE, TOOL, Serve, ag_ui, serve_on, use_chat

WEATHER_TOOL = {"get_weather": {"function": "tests.sample_tools:get_weather"}}
ARGUMENTS = '{"city": "Paris"}'
CITY = {"city": "Paris"}
WEATHER = {"city": "Paris", "temperature": 21, "unit": "c"}
WEATHER_JSON = '{"city":"Paris","temperature":21,"unit":"c"}'
ANSWER = "It is 21 degrees in Paris."
QUESTION = "Weather in Paris?"


def calls_get_weather(kind: str) -> Reply:
    """The provider's first answer: a call of get_weather with ARGUMENTS, in its own wire format."""
    if kind == "openai":
        start = {"index": 0, "id": "call_1", "type": "function", "function": {"name": "get_weather", "arguments": ""}}
        return Reply(
            [
                openai_chunk({"tool_calls": [start]}),
                openai_chunk({"tool_calls": [{"index": 0, "function": {"arguments": ARGUMENTS}}]}),
                openai_chunk({}, "tool_calls"),
                DONE,
            ]
        )
    if kind == "anthropic":
        block = {"type": "tool_use", "id": "toolu_1", "name": "get_weather", "input": {}}
        return Reply(
            [
                anthropic_event("message_start", message={"id": "msg_1", "usage": {"input_tokens": 9}}),
                anthropic_event("content_block_start", index=0, content_block=block),
                anthropic_event(
                    "content_block_delta", index=0, delta={"type": "input_json_delta", "partial_json": ARGUMENTS}
                ),
                anthropic_event("content_block_stop", index=0),
                anthropic_event("message_delta", delta={"stop_reason": "tool_use"}, usage={"output_tokens": 4}),
                anthropic_event("message_stop"),
            ]
        )
    call = {"function": {"name": "get_weather", "arguments": CITY}}
    lines: list[bytes | float] = [
        ndjson({"message": {"role": "assistant", "content": "", "tool_calls": [call]}, "done": False}),
        ndjson({"message": {"role": "assistant", "content": ""}, "done": True, "done_reason": "stop"}),
    ]
    return Reply(lines, headers={"content-type": "application/x-ndjson"})


def test_openai_gets_the_server_tool_call_and_result_back_and_the_ag_ui_client_sees_both(serve: Serve) -> None:
    with fake_in_thread(calls_get_weather("openai"), text_reply("openai", ANSWER)) as fake:
        url = serve_on(serve, "openai", fake.url, tools=WEATHER_TOOL)
        result = ag_ui(url, [{"id": "u1", "role": "user", "content": QUESTION}])
    (tool_result,) = [e for e in result["events"] if e["type"] == "TOOL_CALL_RESULT"]
    assert (tool_result["toolCallId"], tool_result["content"]) == ("call_1", WEATHER_JSON)
    assert result["messages"][-1]["content"] == ANSWER
    assert fake.bodies[1]["messages"][2:] == [
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {"id": "call_1", "type": "function", "function": {"name": "get_weather", "arguments": ARGUMENTS}}
            ],
        },
        {"role": "tool", "tool_call_id": "call_1", "content": WEATHER_JSON},
    ]


def test_anthropic_gets_tool_use_then_a_tool_result_turn_and_the_use_chat_client_sees_both(serve: Serve) -> None:
    with fake_in_thread(calls_get_weather("anthropic"), text_reply("anthropic", ANSWER)) as fake:
        url = serve_on(serve, "anthropic", fake.url, tools=WEATHER_TOOL)
        result = use_chat(url, 6, [{"id": "u1", "role": "user", "parts": [{"type": "text", "text": QUESTION}]}])
    parts = result["message"]["parts"]
    (tool,) = [p for p in parts if p["type"] == "tool-get_weather"]
    assert (tool["toolCallId"], tool["state"], tool["output"]) == ("toolu_1", "output-available", WEATHER)
    assert [p["text"] for p in parts if p["type"] == "text"] == [ANSWER]
    assert fake.bodies[1]["messages"][1:] == [
        {
            "role": "assistant",
            "content": [{"type": "tool_use", "id": "toolu_1", "name": "get_weather", "input": CITY}],
        },
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": WEATHER_JSON}]},
    ]


def test_ollama_gets_tool_calls_then_a_tool_message_naming_the_tool_and_the_use_chat_client_sees_both(
    serve: Serve,
) -> None:
    with fake_in_thread(calls_get_weather("ollama"), text_reply("ollama", ANSWER)) as fake:
        url = serve_on(serve, "ollama", fake.url, tools=WEATHER_TOOL, vercel_ai_version="v7")
        result = use_chat(url, 7, [{"id": "u1", "role": "user", "parts": [{"type": "text", "text": QUESTION}]}])
    parts = result["message"]["parts"]
    (tool,) = [p for p in parts if p["type"] == "tool-get_weather"]
    assert (tool["state"], tool["output"]) == ("output-available", WEATHER)
    assert [p["text"] for p in parts if p["type"] == "text"] == [ANSWER]
    assert fake.bodies[1]["messages"][2:] == [
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [{"function": {"name": "get_weather", "arguments": CITY}}],
        },
        {"role": "tool", "content": WEATHER_JSON, "tool_name": "get_weather"},
    ]


FRONTEND_RESULT_IN_ITS_FORM: dict[str, list[dict[str, Any]]] = {
    "openai": [
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [{"id": "call_7", "type": "function", "function": {"name": "get_time", "arguments": "{}"}}],
        },
        {"role": "tool", "tool_call_id": "call_7", "content": "12:00"},
    ],
    "anthropic": [
        {"role": "assistant", "content": [{"type": "tool_use", "id": "call_7", "name": "get_time", "input": {}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "call_7", "content": "12:00"}]},
    ],
    "ollama": [
        {"role": "assistant", "content": "", "tool_calls": [{"function": {"name": "get_time", "arguments": {}}}]},
        {"role": "tool", "content": "12:00", "tool_name": "get_time"},
    ],
}


@pytest.mark.parametrize("kind", ["openai", "anthropic", "ollama"])
def test_an_ag_ui_tool_message_reaches_each_upstream_as_its_tool_result(serve: Serve, kind: str) -> None:
    messages: list[dict[str, Any]] = [
        {"id": "u1", "role": "user", "content": "What time is it?"},
        {
            "id": "a1",
            "role": "assistant",
            "toolCalls": [{"id": "call_7", "type": "function", "function": {"name": "get_time", "arguments": "{}"}}],
        },
        {"id": "t1", "role": "tool", "toolCallId": "call_7", "content": "12:00"},
    ]
    with fake_in_thread(text_reply(kind, "It is noon.")) as fake:
        result = ag_ui(serve_on(serve, kind, fake.url), messages, tools=[TOOL])
    assert result["messages"][-1]["content"] == "It is noon."
    assert fake.bodies[0]["messages"][-2:] == FRONTEND_RESULT_IN_ITS_FORM[kind]


@pytest.mark.parametrize("kind", ["openai", "anthropic", "ollama"])
def test_a_use_chat_tool_output_reaches_each_upstream_as_its_tool_result(serve: Serve, kind: str) -> None:
    user = {"id": "u1", "role": "user", "parts": [{"type": "text", "text": "What time is it?"}]}
    output = {
        "type": "tool-get_time",
        "toolCallId": "call_7",
        "state": "output-available",
        "input": {},
        "output": "12:00",
    }
    assistant = {"id": "a1", "role": "assistant", "parts": [{"type": "step-start"}, output]}
    with fake_in_thread(text_reply(kind, "It is noon.")) as fake:
        url = serve_on(serve, kind, fake.url, client_tools={"get_time": {"description": "The time now"}})
        result = use_chat(url, 6, [user, assistant], messageId="a1")
    assert result["message"]["id"] == "a1"
    assert [p["text"] for p in result["message"]["parts"] if p["type"] == "text"] == ["It is noon."]
    assert fake.bodies[0]["messages"][-2:] == FRONTEND_RESULT_IN_ITS_FORM[kind]

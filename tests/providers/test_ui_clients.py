"""Real providers behind a live chatgate, judged by the real UI clients (@ag-ui/client, npm ai).

Also: a client that hangs up mid-stream gets the upstream request closed within a second, and the
provider data a second turn needs (Anthropic thinking signatures, tool-call ids) survives the round
trip through each UI protocol.
"""

import time
from collections.abc import Callable
from typing import Any

import httpx

from chatgate.config import Config
from tests.conftest import make_config, run_node_client
from tests.providers.fakes import Reply, anthropic_event, fake_in_thread, ndjson, openai_chunk, openai_usage
from tests.providers.support import provider_table

Serve = Callable[[Config], str]
PROMPT = "Operator prompt."
DONE = b"data: [DONE]\n\n"
TOOL = {"name": "get_time", "description": "The time now", "parameters": {"type": "object", "properties": {}}}


def serve_on(serve: Serve, kind: str, upstream_url: str, **agent: Any) -> str:
    config = make_config(
        {"helper": {"model": "up:model-x", "system_prompt": PROMPT, "default": True, **agent}},
        providers={"up": provider_table(kind, upstream_url)},
    )
    return serve(config)


def ag_ui(url: str, messages: list[dict[str, Any]], **extra: Any) -> dict[str, Any]:
    result: dict[str, Any] = run_node_client(
        "ag_ui_run.mjs", {"url": url + "/ag-ui", "input": {"messages": messages, **extra}}
    )
    return result


def use_chat(url: str, version: int, messages: list[dict[str, Any]], **extra: Any) -> dict[str, Any]:
    body = {"id": "chat-1", "messages": messages, "trigger": "submit-message", **extra}
    result: dict[str, Any] = run_node_client(
        "vercel_ai_run.mjs", {"url": url + "/api/chat", "version": version, "body": body}
    )
    return result


def openai_text(*texts: str) -> Reply:
    return Reply(
        [*(openai_chunk({"content": text}) for text in texts), openai_chunk({}, "stop"), openai_usage(5, 2), DONE]
    )


def anthropic_thinking_then_tool() -> Reply:
    def delta(index: int, **fields: Any) -> bytes:
        return anthropic_event("content_block_delta", index=index, delta=fields)

    usage = {"input_tokens": 20, "output_tokens": 1}
    return Reply(
        [
            anthropic_event("message_start", message={"id": "msg_1", "role": "assistant", "usage": usage}),
            anthropic_event("content_block_start", index=0, content_block={"type": "thinking", "thinking": ""}),
            delta(0, type="thinking_delta", thinking="The user wants the time."),
            delta(0, type="signature_delta", signature="SIG-abc123"),
            anthropic_event("content_block_stop", index=0),
            anthropic_event("ping"),
            anthropic_event(
                "content_block_start", index=1, content_block={"type": "tool_use", "id": "toolu_9", "name": "get_time"}
            ),
            delta(1, type="input_json_delta", partial_json='{"zone": "UTC"}'),
            anthropic_event("content_block_stop", index=1),
            anthropic_event("message_delta", delta={"stop_reason": "tool_use"}, usage={"output_tokens": 30}),
            anthropic_event("message_stop"),
        ]
    )


def anthropic_text(text: str) -> Reply:
    return Reply(
        [
            anthropic_event("message_start", message={"id": "msg_2", "usage": {"input_tokens": 40}}),
            anthropic_event("content_block_start", index=0, content_block={"type": "text", "text": ""}),
            anthropic_event("content_block_delta", index=0, delta={"type": "text_delta", "text": text}),
            anthropic_event("content_block_stop", index=0),
            anthropic_event("message_delta", delta={"stop_reason": "end_turn"}, usage={"output_tokens": 3}),
            anthropic_event("message_stop"),
        ]
    )


SECOND_TURN_ASSISTANT = {
    "role": "assistant",
    "content": [
        {"type": "thinking", "thinking": "The user wants the time.", "signature": "SIG-abc123"},
        {"type": "tool_use", "id": "toolu_9", "name": "get_time", "input": {"zone": "UTC"}},
    ],
}


def test_ag_ui_client_on_openai_text(serve: Serve) -> None:
    with fake_in_thread(openai_text("Hello", " there")) as fake:
        url = serve_on(serve, "openai", fake.url)
        result = ag_ui(url, [{"id": "u1", "role": "user", "content": "Hi"}])
    assert [e["type"] for e in result["events"]] == [
        "RUN_STARTED",
        "STEP_STARTED",
        "TEXT_MESSAGE_START",
        "TEXT_MESSAGE_CONTENT",
        "TEXT_MESSAGE_CONTENT",
        "TEXT_MESSAGE_END",
        "STEP_FINISHED",
        "RUN_FINISHED",
    ]
    assert result["messages"][-1]["content"] == "Hello there"
    assert fake.bodies[0]["messages"] == [
        {"role": "system", "content": PROMPT},
        {"role": "user", "content": "Hi"},
    ]


def test_ag_ui_client_sees_run_error_when_the_upstream_refuses(serve: Serve) -> None:
    refusal = Reply([b'{"error": "bad key sk-secret"}'], status=401, headers={"content-type": "application/json"})
    with fake_in_thread(refusal) as fake:
        result = ag_ui(serve_on(serve, "openai", fake.url), [{"id": "u1", "role": "user", "content": "Hi"}])
    assert result["events"][-1] == {
        "type": "RUN_ERROR",
        "message": "The model provider rejected the request.",
        "code": "model_error",
    }
    assert "sk-secret" not in str(result)


def test_ag_ui_client_on_anthropic_thinking_and_tools_across_two_turns(serve: Serve) -> None:
    with fake_in_thread(anthropic_thinking_then_tool(), anthropic_text("It is noon.")) as fake:
        url = serve_on(serve, "anthropic", fake.url)
        first = ag_ui(url, [{"id": "u1", "role": "user", "content": "What time is it?"}], tools=[TOOL])
        types = [e["type"] for e in first["events"]]
        assert types[-4:] == ["TOOL_CALL_ARGS", "TOOL_CALL_END", "STEP_FINISHED", "RUN_FINISHED"]
        assert "REASONING_MESSAGE_CONTENT" in types
        tool_result = {"id": "t1", "role": "tool", "toolCallId": "toolu_9", "content": "12:00"}
        second = ag_ui(url, [*first["messages"], tool_result], tools=[TOOL])
    assert second["messages"][-1]["content"] == "It is noon."
    turns = fake.bodies[1]["messages"]
    assert fake.bodies[1]["system"] == PROMPT
    assert turns[1] == SECOND_TURN_ASSISTANT
    assert turns[2] == {
        "role": "user",
        "content": [{"type": "tool_result", "tool_use_id": "toolu_9", "content": "12:00"}],
    }


def test_use_chat_clients_on_ollama_text(serve: Serve) -> None:
    lines = [
        ndjson({"message": {"role": "assistant", "content": "", "thinking": "Easy."}, "done": False}),
        ndjson({"message": {"role": "assistant", "content": "Bonjour"}, "done": False}),
        ndjson({"message": {"role": "assistant", "content": ""}, "done": True, "done_reason": "stop"}),
    ]
    for version in (5, 6, 7):
        with fake_in_thread(Reply(lines, headers={"content-type": "application/x-ndjson"})) as fake:
            url = serve_on(serve, "ollama", fake.url, vercel_ai_version=f"v{version}")
            result = use_chat(url, version, [{"id": "u1", "role": "user", "parts": [{"type": "text", "text": "Hi"}]}])
        parts = result["message"]["parts"]
        assert [p["text"] for p in parts if p["type"] == "reasoning"] == ["Easy."]
        assert [p["text"] for p in parts if p["type"] == "text"] == ["Bonjour"]
        assert result["chunks"][-1]["type"] == "finish"


def test_use_chat_client_on_openai_mid_stream_failure(serve: Serve) -> None:
    reply = Reply([openai_chunk({"content": "Hal"})], ending="cut")
    with fake_in_thread(reply) as fake:
        url = serve_on(serve, "openai", fake.url)
        result = use_chat(url, 6, [{"id": "u1", "role": "user", "parts": [{"type": "text", "text": "Hi"}]}])
    types = [chunk["type"] for chunk in result["chunks"]]
    assert types[-3:] == ["error", "finish-step", "finish"]
    assert "text-end" in types


def test_use_chat_client_on_anthropic_thinking_and_tools_across_two_turns(serve: Serve) -> None:
    with fake_in_thread(anthropic_thinking_then_tool(), anthropic_text("It is noon.")) as fake:
        url = serve_on(serve, "anthropic", fake.url, client_tools={"get_time": {"description": "The time now"}})
        user = {"id": "u1", "role": "user", "parts": [{"type": "text", "text": "What time is it?"}]}
        first = use_chat(url, 6, [user])
        message = first["message"]
        for part in message["parts"]:
            if part["type"] == "tool-get_time":
                part.update(state="output-available", output="12:00")
        second = use_chat(url, 6, [user, message], messageId=message["id"])
    assert "".join(p["text"] for p in second["message"]["parts"] if p["type"] == "text") == "It is noon."
    turns = fake.bodies[1]["messages"]
    assert turns[1] == SECOND_TURN_ASSISTANT
    assert turns[2]["content"][0]["tool_use_id"] == "toolu_9"


def test_a_client_hanging_up_mid_stream_closes_the_upstream(serve: Serve) -> None:
    slow = Reply([openai_chunk({"content": "tick "}), *[0.05, openai_chunk({"content": "tick "})] * 2000])  # 100 s
    with fake_in_thread(slow) as fake:
        url = serve_on(serve, "openai", fake.url)
        body = {"threadId": "t", "runId": "r", "messages": [{"id": "u1", "role": "user", "content": "Hi"}]}
        with httpx.stream("POST", url + "/ag-ui", json=body, timeout=10) as response:
            for line in response.iter_lines():
                if "TEXT_MESSAGE_CONTENT" in line:
                    break
        deadline = time.monotonic() + 50  # half the answer: closing is what ends the wait, on any machine
        while not fake.closed_at and time.monotonic() < deadline:
            time.sleep(0.01)
    assert fake.closed_at, "the upstream connection was not closed before the answer's end"

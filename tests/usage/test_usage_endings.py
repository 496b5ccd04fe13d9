"""The run's usage at its end, in both protocols, summed over a two-step tool run from what each provider
API's fake upstream reported (reasoning, cache reads and cache writes included).

Every AG-UI event is checked strictly by @ag-ui/core's ``EventSchema`` (ag_ui_run.mjs, or
ag_ui_validate.mjs for streams read here) and every useChat chunk by its ``ai`` major's own
``uiMessageChunkSchema`` (vercel_ai_run.mjs).
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from typing import Any

import httpx
import pytest

from chatgate.config import Config
from tests.conftest import check_ag_ui_events, check_use_chat_stream, make_config
from tests.providers.fakes import Reply, anthropic_event, fake_in_thread, ndjson, openai_chunk, openai_usage
from tests.providers.support import provider_table
from tests.providers.test_ui_clients import ag_ui, use_chat

Serve = Callable[[Config], str]
DONE = b"data: [DONE]\n\n"
WEATHER = {"get_weather": {"function": "tests.sample_tools:get_weather"}}
ASK = [{"id": "u1", "role": "user", "content": "Weather in Paris?"}]
ASK_UI = [{"id": "u1", "role": "user", "parts": [{"type": "text", "text": "Weather in Paris?"}]}]


def _openai() -> tuple[Reply, Reply]:
    call = {"index": 0, "id": "call_1", "type": "function"}
    call["function"] = {"name": "get_weather", "arguments": '{"city": "Paris"}'}
    first_usage = openai_usage(100, 20, cached=40, reasoning=5)
    first = Reply([openai_chunk({"tool_calls": [call]}), openai_chunk({}, "tool_calls"), first_usage])
    second_usage = openai_usage(150, 10, cached=100, reasoning=0)
    second = Reply([openai_chunk({"content": "Sunny."}), openai_chunk({}, "stop"), second_usage])
    first.body.append(DONE)
    second.body.append(DONE)
    return first, second


def _anthropic_turn(blocks: list[bytes], stop: str, usage: dict[str, int], output: int) -> Reply:
    start = anthropic_event("message_start", message={"id": "msg_1", "role": "assistant", "usage": usage})
    end = anthropic_event("message_delta", delta={"stop_reason": stop}, usage={"output_tokens": output})
    return Reply([start, *blocks, end, anthropic_event("message_stop")])


def _anthropic() -> tuple[Reply, Reply]:
    tool = {"type": "tool_use", "id": "toolu_1", "name": "get_weather"}
    call = [
        anthropic_event("content_block_start", index=0, content_block=tool),
        anthropic_event(
            "content_block_delta", index=0, delta={"type": "input_json_delta", "partial_json": '{"city":"Paris"}'}
        ),
        anthropic_event("content_block_stop", index=0),
    ]
    text = [
        anthropic_event("content_block_start", index=0, content_block={"type": "text", "text": ""}),
        anthropic_event("content_block_delta", index=0, delta={"type": "text_delta", "text": "Sunny."}),
        anthropic_event("content_block_stop", index=0),
    ]
    first = {"input_tokens": 10, "cache_read_input_tokens": 80, "cache_creation_input_tokens": 30, "output_tokens": 1}
    second = {"input_tokens": 5, "cache_read_input_tokens": 110, "cache_creation_input_tokens": 0, "output_tokens": 1}
    return _anthropic_turn(call, "tool_use", first, 15), _anthropic_turn(text, "end_turn", second, 7)


def _ollama() -> tuple[Reply, Reply]:
    headers = {"content-type": "application/x-ndjson"}
    call = {"function": {"name": "get_weather", "arguments": {"city": "Paris"}}}
    first = [
        ndjson({"message": {"role": "assistant", "content": "", "tool_calls": [call]}, "done": False}),
        ndjson(
            {
                "message": {"role": "assistant", "content": ""},
                "done": True,
                "done_reason": "stop",
                "prompt_eval_count": 50,
                "eval_count": 10,
            }
        ),
    ]
    second = [
        ndjson({"message": {"role": "assistant", "content": "Sunny."}, "done": False}),
        ndjson(
            {
                "message": {"role": "assistant", "content": ""},
                "done": True,
                "done_reason": "stop",
                "prompt_eval_count": 70,
                "eval_count": 5,
            }
        ),
    ]
    return Reply(first, headers=headers), Reply(second, headers=headers)


# What each API's two steps add up to, as AG-UI's TokenUsage counts (input and output are totals).
CASES: dict[str, tuple[Callable[[], tuple[Reply, Reply]], dict[str, int]]] = {
    "openai": (
        _openai,
        {"inputTokens": 250, "outputTokens": 30, "totalTokens": 280, "reasoningTokens": 5, "cachedInputTokens": 140},
    ),
    "anthropic": (
        _anthropic,
        {
            "inputTokens": 235,
            "outputTokens": 22,
            "totalTokens": 257,
            "cachedInputTokens": 190,
            "cacheWriteInputTokens": 30,
        },
    ),
    "ollama": (_ollama, {"inputTokens": 120, "outputTokens": 15, "totalTokens": 135}),
}


def _config(kind: str, url: str, **agent: Any) -> Config:
    return make_config(
        {"bot": {"model": "up:model-x", "default": True, "tools": WEATHER, "vercel_ai_version": "v7", **agent}},
        providers={"up": provider_table(kind, url)},
    )


@pytest.mark.parametrize("kind", list(CASES))
def test_a_two_step_tool_runs_usage_is_summed_the_same_for_both_protocols(serve: Serve, kind: str) -> None:
    replies, summed = CASES[kind]
    with fake_in_thread(*replies(), *replies()) as fake:
        url = serve(_config(kind, fake.url))
        agui = ag_ui(url, ASK)
        chat = use_chat(url, 7, ASK_UI)
    assert len(fake.requests) == 4  # two model calls per run: the tool call, then the answer
    finished = agui["events"][-1]
    assert finished["type"] == "RUN_FINISHED" and "outcome" not in finished
    assert finished["usage"] == [{"provider": "up", "model": "model-x", **summed}]
    assert [e["type"] for e in agui["events"]].count("TOOL_CALL_RESULT") == 1
    # useChat: the same numbers, in the message's metadata (what a frontend shows)
    metadata = chat["message"]["metadata"]
    assert metadata.pop("runId").startswith("run_")
    assert metadata == {"usage": summed, "model": "model-x", "provider": "up"}
    assert chat["chunks"][-1]["finishReason"] == "stop"


def test_a_run_cut_off_upstream_reports_what_it_used_and_v7_calls_it_interrupted(serve: Serve) -> None:
    first, _ = _openai()
    cut = Reply([openai_chunk({"content": "Sun"})], ending="cut")  # the upstream breaks off mid-answer
    with fake_in_thread(first, cut, first, cut, first, cut) as fake:
        url = serve(_config("openai", fake.url))
        agui = ag_ui(url, ASK)
        v7 = use_chat(url, 7, ASK_UI)
        v6 = use_chat(make_v6(serve, fake.url), 6, ASK_UI)
    assert len(fake.requests) == 6
    step_one = {
        "inputTokens": 100,
        "outputTokens": 20,
        "totalTokens": 120,
        "reasoningTokens": 5,
        "cachedInputTokens": 40,
    }
    error = agui["events"][-1]
    assert error["type"] == "RUN_ERROR" and error["usage"] == [{"provider": "up", "model": "model-x", **step_one}]
    # ai 7: the partial answer stands, finishReason interrupted, no error chunk
    assert v7["chunks"][-1]["finishReason"] == "interrupted"
    assert not any(chunk["type"] == "error" for chunk in v7["chunks"])
    assert v7["message"]["parts"][-1] == {"type": "text", "text": "Sun", "state": "done"}
    assert v7["message"]["metadata"]["usage"] == step_one
    # ai 6 knows no "interrupted": the error ending it has always had, with the usage
    assert v6["chunks"][-1]["finishReason"] == "error" and v6["message"]["metadata"]["usage"] == step_one


def make_v6(serve: Serve, upstream: str) -> str:
    return serve(_config("openai", upstream, vercel_ai_version="v6"))


def _stream(url: str, path: str, body: Any) -> tuple[list[str], threading.Thread]:
    lines: list[str] = []

    def read() -> None:
        with httpx.stream("POST", f"{url}{path}", json=body, timeout=30) as response:
            lines.extend(line for line in response.iter_lines() if line)

    reader = threading.Thread(target=read)
    reader.start()
    return lines, reader


def _wait_for(lines: list[str], text: str) -> None:
    deadline = time.monotonic() + 10
    while not any(text in line for line in lines):
        assert time.monotonic() < deadline, lines
        time.sleep(0.02)


def test_a_stopped_run_reports_the_usage_of_its_finished_steps(serve: Serve, store_url: str) -> None:
    first, _ = _openai()
    hang = Reply([openai_chunk({"content": "Sun"}), 30.0])  # the second step stalls mid-answer
    with fake_in_thread(first, hang, first, hang) as fake:
        config = make_config(
            {"bot": {"model": "up:model-x", "tools": WEATHER, "conversations": "server", "vercel_ai_version": "v7"}},
            providers={"up": provider_table("openai", fake.url)},
            store={"url": store_url},
        )
        url = serve(config)
        body = {"threadId": "t1", "runId": "r1", "messages": ASK}
        agui, reader = _stream(url, "/agents/bot/ag-ui", body)
        _wait_for(agui, "TEXT_MESSAGE_CONTENT")
        assert httpx.post(f"{url}/agents/bot/threads/t1/stop").json() == {"stopped": True}
        reader.join(timeout=10)
        chat, reader = _stream(url, "/agents/bot/chat", {"id": "c1", "message": ASK_UI[0]})
        _wait_for(chat, '"text-delta"')
        assert httpx.post(f"{url}/agents/bot/threads/c1/stop").json() == {"stopped": True}
        reader.join(timeout=10)
    assert len(fake.requests) == 4
    step_one = {
        "inputTokens": 100,
        "outputTokens": 20,
        "totalTokens": 120,
        "reasoningTokens": 5,
        "cachedInputTokens": 40,
    }
    events = [json.loads(line[len("data: ") :]) for line in agui]
    check_ag_ui_events(events)
    assert events[-1]["outcome"] == {"type": "cancelled"}
    assert events[-1]["usage"] == [{"provider": "up", "model": "model-x", **step_one}]
    # useChat: the usage as message-metadata, then abort, as the AI SDK ends an aborted stream
    assert chat[-2:] == ['data: {"type":"abort"}', "data: [DONE]"]
    for version in (5, 6, 7):  # every ai major accepts this ending (no chunk here is version-specific)
        types = check_use_chat_stream(version, "".join(f"{line}\n\n" for line in chat))
        assert types[-3:] == ["finish-step", "message-metadata", "abort"]
    metadata = json.loads(chat[-3][len("data: ") :])
    assert metadata == {
        "type": "message-metadata",
        "messageMetadata": {"usage": step_one, "model": "model-x", "provider": "up"},
    }

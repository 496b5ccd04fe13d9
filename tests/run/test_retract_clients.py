"""A failover after output started, as the real UI clients see it: only the replacement is left.

ai 7 (``reset-step``) and ``@ag-ui/client`` (``MESSAGES_SNAPSHOT``) drop the partial step; ai 5 and 6, which
have no way to, keep the partial answer and its error, as without fallbacks. Stored threads (both stores)
keep only the replacement, and a resume replays the one coherent answer.
"""

from __future__ import annotations

import asyncio
import json
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest

from chatgate.history import AssistantMessage
from chatgate.store import open_store
from tests.conftest import check_ag_ui_events, check_use_chat_stream, make_config, run_node_client
from tests.providers.fakes import Reply, anthropic_event, fake_in_thread, openai_chunk, openai_usage
from tests.providers.support import provider_table
from tests.providers.test_ui_clients import DONE, ag_ui, openai_text, use_chat
from tests.run.test_failover_clients import USER, Serve, serve_chain
from tests.store.conftest import store_url
from tests.tracing.otlp_collector import running_collector

__all__ = ["store_url"]  # both stores, for the stored thread

CUT = {
    "text": Reply([openai_chunk({"content": "Hal"})], ending="cut"),
    "tool-call-start": Reply(
        [
            openai_chunk({"content": "Let me check."}),
            openai_chunk(
                {"tool_calls": [{"index": 0, "id": "call_1", "type": "function", "function": {"name": "get_time"}}]}
            ),
        ],
        ending="cut",
    ),
    "reasoning": Reply([openai_chunk({"reasoning_content": "Hmm"})], ending="cut"),
}
TOOLS = [{"name": "get_time", "description": "The time.", "parameters": {"type": "object", "properties": {}}}]


def texts(message: dict[str, Any]) -> list[str]:
    return [part["text"] for part in message["parts"] if part["type"] == "text"]


@pytest.mark.parametrize("position", list(CUT))
def test_use_chat_7_keeps_only_the_replacement(serve: Serve, position: str) -> None:
    with fake_in_thread(CUT[position]) as dead, fake_in_thread(openai_text("Hello", " there")) as live:
        url = serve_chain(serve, dead.url, live.url, vercel_ai_version="v7")
        result = use_chat(url, 7, [USER])
    types = [chunk["type"] for chunk in result["chunks"]]
    assert types.count("reset-step") == 1 and types.count("start-step") == 1
    assert "error" not in types and types[-1] == "finish"
    parts = result["message"]["parts"]
    assert [part["type"] for part in parts] == ["step-start", "text"]  # no partial text, reasoning or tool call
    assert texts(result["message"]) == ["Hello there"]
    assert len(dead.requests) == 1 and len(live.requests) == 1


@pytest.mark.parametrize("version", [5, 6])
def test_use_chat_5_and_6_keep_the_partial_answer_and_its_error(serve: Serve, version: int) -> None:
    with fake_in_thread(CUT["text"]) as dead, fake_in_thread(openai_text("Hello")) as live:
        url = serve_chain(serve, dead.url, live.url, vercel_ai_version=f"v{version}")
        result = use_chat(url, version, [USER])
    types = [chunk["type"] for chunk in result["chunks"]]
    assert "reset-step" not in types and "error" in types
    assert texts(result["message"]) == ["Hal"]  # what the user saw stands; nothing is spliced onto it
    assert len(dead.requests) == 1 and live.requests == []


@pytest.mark.parametrize("position", list(CUT))
def test_ag_ui_client_keeps_only_the_replacement(serve: Serve, position: str) -> None:
    earlier = [
        {"id": "s1", "role": "system", "content": "Be brief."},
        {"id": "u0", "role": "user", "content": "Hello?"},
        {"id": "a0", "role": "assistant", "content": "Hi."},
        {"id": "u1", "role": "user", "content": "What time is it?"},
    ]
    with fake_in_thread(CUT[position]) as dead, fake_in_thread(openai_text("Hello", " there")) as live:
        url = serve_chain(serve, dead.url, live.url, manage_system_prompt="client")
        result = ag_ui(url, earlier, tools=TOOLS)
    events = result["events"]
    types = [event["type"] for event in events]
    assert types.count("MESSAGES_SNAPSHOT") == 1 and types.count("STEP_STARTED") == 1
    assert types[-1] == "RUN_FINISHED"
    messages = result["messages"]
    assert [m["id"] for m in messages[:4]] == ["s1", "u0", "a0", "u1"]  # the client's own messages stand
    withdrawn = [("reasoning", "")] if position == "reasoning" else []  # the client keeps it, emptied
    assert [(m["role"], m.get("content")) for m in messages[4:]] == [*withdrawn, ("assistant", "Hello there")]
    assert not any(m.get("toolCalls") for m in messages)  # a partial call is dropped with its step
    answer = next(e for e in reversed(events) if e["type"] == "TEXT_MESSAGE_START")
    assert answer["messageId"] == messages[-1]["id"]  # the replacement streams under its own id
    assert len(dead.requests) == 1 and len(live.requests) == 1


def test_a_stored_thread_keeps_the_replacement_and_notes_the_failed_attempt(serve: Serve, store_url: str) -> None:
    answers = (openai_text("Hello", " there"), openai_text("Hello", " there"), openai_text("Bye"))
    with fake_in_thread(CUT["text"], CUT["text"]) as dead, fake_in_thread(*answers) as live:
        url = serve_chain(
            serve, dead.url, live.url, {"store": {"url": store_url}}, conversations="server", vercel_ai_version="v7"
        )
        first = use_chat(url, 7, [USER], id="t1")
        again = httpx.get(url + "/agents/helper/threads/t1/messages", timeout=10).json()["messages"]
        agui = ag_ui(url, [{"id": "u1", "role": "user", "content": "Hi"}], threadId="t2")
        # The next turn sends what the client holds: the thread knows each message of it (it is not behind).
        # Its first model is cut again (the fake repeats its last reply), and again only the replacement stays.
        follow_up = ag_ui(url, [*agui["messages"], {"id": "u2", "role": "user", "content": "Bye?"}], threadId="t2")
        assert len(live.requests) == 3
    assert texts(first["message"]) == ["Hello there"]
    assert [texts(m) for m in again if m["role"] == "assistant"] == [["Hello there"]]
    assert [m.get("content") for m in agui["messages"] if m["role"] == "assistant"] == ["Hello there"]
    assert follow_up["events"][1]["type"] == "STEP_STARTED"  # no snapshot for a client behind: it is not
    assert [m.get("content") for m in follow_up["messages"] if m["role"] == "assistant"] == ["Hello there", "Bye"]
    withdrawn = {"retracted": [{"model": "up0:m0", "reason": "failover", "failure": "interrupted"}]}
    for thread, said in (("t1", ["Hello there"]), ("t2", ["Hello there", "Bye"])):
        answers = asyncio.run(_stored_answers(store_url, thread))
        assert [answer.text for answer in answers] == said
        assert all(answer.metadata["retracted"] == withdrawn["retracted"] for answer in answers)


async def _stored_answers(store_url: str, thread_id: str) -> list[AssistantMessage]:
    store = await open_store(store_url, Path.cwd())
    try:
        info = await store.get_thread("", "helper", thread_id)
        assert info is not None
        return [m.message for m in await store.messages(info) if isinstance(m.message, AssistantMessage)]
    finally:
        await store.close()


@contextmanager
def run_held_mid_failover(
    serve: Serve, tmp_path: Path, path: str, body: dict[str, Any], **agent: Any
) -> Iterator[tuple[str, threading.Event]]:
    """A stored thread's run whose first model was cut after "Hal" and whose replacement holds after "Hello".

    ``body`` is POSTed to ``path`` in the background; yields the server's URL once the replacement is held,
    and the event that releases it (" there" and the end follow); the block's end releases it too.
    """
    held = threading.Event()
    rest = [openai_chunk({"content": " there"}), openai_chunk({}, "stop"), openai_usage(5, 2), DONE]
    replacement = Reply([openai_chunk({"content": "Hello"}), held, *rest])
    store = {"store": {"url": f"sqlite:///{tmp_path / 'threads.db'}"}}
    with fake_in_thread(CUT["text"]) as dead, fake_in_thread(replacement) as live:
        url = serve_chain(serve, dead.url, live.url, store, conversations="server", **agent)
        posted = threading.Thread(target=httpx.post, args=(url + path,), kwargs={"json": body, "timeout": 60})
        posted.start()
        try:
            deadline = time.monotonic() + 30  # only how long a failing test waits before it says so
            while not live.requests and time.monotonic() < deadline:
                time.sleep(0.02)
            yield url, held
        finally:
            held.set()
            posted.join()
        assert len(dead.requests) == 1 and len(live.requests) == 1


def test_a_resume_after_a_failover_replays_one_coherent_answer(serve: Serve, tmp_path: Path) -> None:
    body = {"id": "t1", "messages": [USER], "trigger": "submit-message"}
    with run_held_mid_failover(serve, tmp_path, "/api/chat", body, vercel_ai_version="v7") as (url, held):
        resumed = httpx.stream("GET", url + "/api/chat/t1/stream", timeout=60)
        with resumed as response:
            assert response.status_code == 200
            held.set()
            replay = response.read().decode()
    result = check_use_chat_stream(7, replay)
    assert result.count("reset-step") == 1
    assert _message(replay) == ["Hello there"]


def _message(text: str) -> list[str]:
    """The texts of the message ai 7's ``readUIMessageStream`` assembles from ``text``, as useChat does."""
    message = run_node_client("vercel_ai_validate.mjs", {"version": 7, "text": text})["message"]
    return texts(message)


def test_each_attempt_of_a_retracted_step_is_its_own_chat_span(serve: Serve, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OTEL_BSP_SCHEDULE_DELAY", "50")  # export every 50 ms instead of every 5 s
    trace_id = "0af7651916cd43dd8448eb211c80319d"
    headers = {"traceparent": f"00-{trace_id}-b7ad6b7169203331-01"}
    body = {"threadId": "t", "runId": "r", "messages": [{"id": "u1", "role": "user", "content": "Hi"}]}
    with running_collector() as collector, fake_in_thread(CUT["text"]) as dead:
        with fake_in_thread(openai_text("Hello")) as live:
            url = serve_chain(serve, dead.url, live.url, {"telemetry": {"otlp_endpoint": collector.url}})
            assert "MESSAGES_SNAPSHOT" in httpx.post(url + "/ag-ui", json=body, headers=headers, timeout=30).text
        spans = collector.trace(trace_id, 3)
    chats = {span.name: span for span in spans if span.name.startswith("chat ")}
    assert chats["chat m0"].attributes["error.type"] == "interrupted"
    assert "chatgate.failover.reason" not in chats["chat m0"].attributes
    assert chats["chat m1"].attributes["chatgate.failover.reason"] == "interrupted"


def test_ag_ui_client_keeps_the_earlier_steps_of_the_run(serve: Serve) -> None:
    call = {"index": 0, "id": "call_1", "type": "function", "function": {"name": "clock", "arguments": "{}"}}
    calls_clock = Reply([openai_chunk({"tool_calls": [call]}), openai_chunk({}, "tool_calls"), DONE])
    with fake_in_thread(calls_clock, CUT["text"]) as dead, fake_in_thread(openai_text("Noon.")) as live:
        tools = {"clock": {"function": "tests.run.test_retract:clock"}}
        url = serve_chain(serve, dead.url, live.url, tools=tools)
        result = ag_ui(url, [{"id": "u1", "role": "user", "content": "Time?"}])
    messages = result["messages"]
    assert [m["role"] for m in messages] == ["user", "assistant", "tool", "assistant"]
    assert [c["function"]["name"] for c in messages[1]["toolCalls"]] == ["clock"]
    assert messages[2]["content"] == "12:00" and messages[3]["content"] == "Noon."
    assert len(dead.requests) == 2 and len(live.requests) == 1


def test_an_ag_ui_reconnect_after_a_failover_replays_the_retraction(serve: Serve, tmp_path: Path) -> None:
    body = {"threadId": "t1", "runId": "r1", "messages": [{"id": "u1", "role": "user", "content": "Hi"}]}
    with run_held_mid_failover(serve, tmp_path, "/ag-ui", body) as (url, held):
        again = {**body, "runId": "r2"}  # adds nothing: it follows the run going on
        with httpx.stream("POST", url + "/ag-ui", json=again, timeout=60) as followed:
            assert followed.status_code == 200
            held.set()
            events = [json.loads(line[6:]) for line in followed.iter_lines() if line.startswith("data: ")]
    check_ag_ui_events(events)
    types = [event["type"] for event in events]
    assert types[-1] == "RUN_FINISHED" and types.count("MESSAGES_SNAPSHOT") == 2  # the rejoin's and the retraction's
    last = len(types) - 1 - types[::-1].index("MESSAGES_SNAPSHOT")
    assert [m["id"] for m in events[last]["messages"]] == ["u1"]
    after = "".join(e["delta"] for e in events[last:] if e["type"] == "TEXT_MESSAGE_CONTENT")
    assert after == "Hello there"


def test_ag_ui_client_keeps_its_reasoning_messages_in_place(serve: Serve) -> None:
    earlier = [
        {"id": "u0", "role": "user", "content": "Hello?"},
        {"id": "r0", "role": "reasoning", "content": "A greeting."},
        {"id": "a0", "role": "assistant", "content": "Hi."},
        {"id": "u1", "role": "user", "content": "And now?"},
    ]
    with fake_in_thread(CUT["reasoning"]) as dead, fake_in_thread(openai_text("Hello")) as live:
        result = ag_ui(serve_chain(serve, dead.url, live.url), earlier)
    messages = result["messages"]
    assert [m["id"] for m in messages[:4]] == ["u0", "r0", "a0", "u1"]
    # The snapshot holds a reasoning message, so the client drops the withdrawn one whole.
    assert [(m["role"], m.get("content")) for m in messages[4:]] == [("assistant", "Hello")]


def test_use_chat_7_drops_a_whole_frontend_call_of_the_withdrawn_step(serve: Serve) -> None:
    call = [
        anthropic_event("message_start", message={"id": "msg_1", "usage": {"input_tokens": 7}}),
        anthropic_event(
            "content_block_start", index=0, content_block={"type": "tool_use", "id": "toolu_1", "name": "get_time"}
        ),
        anthropic_event("content_block_delta", index=0, delta={"type": "input_json_delta", "partial_json": "{}"}),
        anthropic_event("content_block_stop", index=0),
    ]
    with fake_in_thread(Reply(call, ending="cut")) as dead, fake_in_thread(openai_text("Noon.")) as live:
        config = make_config(
            {"helper": {"model": "up0:m0", "fallbacks": ["up1:m1"], "default": True, "vercel_ai_version": "v7"}},
            providers={"up0": provider_table("anthropic", dead.url), "up1": provider_table("openai", live.url)},
        )
        result = use_chat(serve(config), 7, [USER], tools=TOOLS)
    types = [chunk["type"] for chunk in result["chunks"]]
    assert types.index("tool-input-available") < types.index("reset-step")  # the client had the whole call
    assert [part["type"] for part in result["message"]["parts"]] == ["step-start", "text"]
    assert texts(result["message"]) == ["Noon."]

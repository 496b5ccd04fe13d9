"""A failover before output as the real UI clients see it (@ag-ui/client, npm ai): one step, one answer."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import httpx
import pytest

from chatgate.config import Config
from tests.conftest import make_config
from tests.providers.fakes import Reply, fake_in_thread
from tests.providers.support import provider_table
from tests.providers.test_ui_clients import ag_ui, openai_text, use_chat
from tests.run.test_failover import status
from tests.tracing.otlp_collector import running_collector

Serve = Callable[[Config], str]
USER = {"id": "u1", "role": "user", "parts": [{"type": "text", "text": "Hi"}]}


def serve_chain(serve: Serve, dead: str, live: str, top: dict[str, object] | None = None, **agent: object) -> str:
    config = make_config(
        {"helper": {"model": "up0:m0", "fallbacks": ["up1:m1"], "default": True, **agent}},
        providers={"up0": provider_table("openai", dead), "up1": provider_table("openai", live)},
        **(top or {}),
    )
    return serve(config)


@pytest.mark.parametrize("failure", [status(503), Reply([], ending="cut")], ids=["503", "cut"])
def test_ag_ui_client_sees_one_answer(serve: Serve, failure: Reply) -> None:
    with fake_in_thread(failure) as dead, fake_in_thread(openai_text("Hello", " there")) as live:
        result = ag_ui(serve_chain(serve, dead.url, live.url), [{"id": "u1", "role": "user", "content": "Hi"}])
    types = [event["type"] for event in result["events"]]
    assert types.count("STEP_STARTED") == 1 and types.count("TEXT_MESSAGE_START") == 1
    assert types[-1] == "RUN_FINISHED"
    assert [m["content"] for m in result["messages"] if m["role"] == "assistant"] == ["Hello there"]
    assert len(dead.requests) == 1


@pytest.mark.parametrize("version", [5, 6, 7])
def test_use_chat_clients_see_one_answer(serve: Serve, version: int) -> None:
    with fake_in_thread(status(502)) as dead, fake_in_thread(openai_text("Hello", " there")) as live:
        url = serve_chain(serve, dead.url, live.url, vercel_ai_version=f"v{version}")
        result = use_chat(url, version, [USER])
    types = [chunk["type"] for chunk in result["chunks"]]
    assert types.count("start-step") == 1 and "error" not in types and types[-1] == "finish"
    assert [p["text"] for p in result["message"]["parts"] if p["type"] == "text"] == ["Hello there"]


def test_all_failing_ends_in_protocol(serve: Serve) -> None:
    with fake_in_thread(status(500)) as dead, fake_in_thread(status(503)) as also_dead:
        url = serve_chain(serve, dead.url, also_dead.url)
        agui = ag_ui(url, [{"id": "u1", "role": "user", "content": "Hi"}])
        chat = use_chat(url, 6, [USER])
    assert agui["events"][-1] == {
        "type": "RUN_ERROR",
        "message": "The model provider is overloaded; try again later.",
        "code": "model_error",
    }
    types = [chunk["type"] for chunk in chat["chunks"]]
    assert types[-3:] == ["error", "finish-step", "finish"]


def test_each_attempt_is_its_own_chat_span_with_the_reason(serve: Serve, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OTEL_BSP_SCHEDULE_DELAY", "50")  # export every 50 ms instead of every 5 s
    trace_id = "0af7651916cd43dd8448eb211c80319c"
    headers = {"traceparent": f"00-{trace_id}-b7ad6b7169203331-01"}
    body = {"threadId": "t", "runId": "r", "messages": [{"id": "u1", "role": "user", "content": "Hi"}]}
    with running_collector() as collector, fake_in_thread(status(503)) as dead:
        with fake_in_thread(openai_text("Hello")) as live:
            url = serve_chain(serve, dead.url, live.url, {"telemetry": {"otlp_endpoint": collector.url}})
            assert "RUN_FINISHED" in httpx.post(url + "/ag-ui", json=body, headers=headers, timeout=30).text
        spans = collector.trace(trace_id, 3)
    chats = {span.name: span.attributes for span in spans if span.name.startswith("chat ")}
    assert chats["chat m0"]["gen_ai.provider.name"] == "up0" and "chatgate.failover.reason" not in chats["chat m0"]
    assert chats["chat m1"]["gen_ai.provider.name"] == "up1"
    assert chats["chat m1"]["chatgate.failover.reason"] == "overloaded"


def test_a_stored_thread_keeps_only_the_answer(serve: Serve, tmp_path: Path) -> None:
    store = {"store": {"url": f"sqlite:///{tmp_path / 'threads.db'}"}}
    with fake_in_thread(Reply([], ending="cut")) as dead, fake_in_thread(openai_text("Hello")) as live:
        url = serve_chain(serve, dead.url, live.url, store, conversations="server")
        result = ag_ui(url, [{"id": "u1", "role": "user", "content": "Hi"}], threadId="t1")
        stored = httpx.get(url + "/agents/helper/threads/t1/messages", timeout=10).json()
    assert [e["type"] for e in result["events"]].count("TEXT_MESSAGE_START") == 1
    texts = [
        p["text"] for m in stored["messages"] if m["role"] == "assistant" for p in m["parts"] if p["type"] == "text"
    ]
    assert texts == ["Hello"]

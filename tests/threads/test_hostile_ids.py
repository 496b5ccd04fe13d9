"""Hostile ids and text on stored threads, on SQLite and PostgreSQL alike: a 422 naming the field, never a 500.

A NUL in a thread id reached asyncpg (``invalid byte sequence for encoding "UTF8": 0x00``) and answered
500 on every route that takes one; SQLite stored the same id. What cannot be an id is now refused
before any store sees it, and text that can be stored faithfully (message parts, model output) is.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from chatgate.store import open_store
from chatgate.web.app import create_app
from tests.conftest import LiveServer, make_config

HOSTILE_IDS = ["nul\x00id", "tab\tid", "new\nline", "del\x7f", "c1\x85", "sep\u2028", "x" * 201]
HOSTILE_PATH_IDS = ["nul%00id", "tab%09id", "new%0Aline", "del%7F", "c1%C2%85", "sep%E2%80%A8", "x" * 201]


@pytest.fixture
def url(store_url: str) -> Iterator[str]:
    agent = {"model": "builtin:echo", "conversations": "server", "prompts": {"pirate": "Arr."}}
    server = LiveServer(create_app(make_config({"bot": agent}, store={"url": store_url})))
    server.start()
    yield server.url
    server.stop()


def _usechat(thread_id: str, message_id: str = "m1", text: str = "hi") -> dict[str, Any]:
    message = {"id": message_id, "role": "user", "parts": [{"type": "text", "text": text}]}
    return {"id": thread_id, "trigger": "submit-message", "messages": [message]}


def _ag_ui(thread_id: str, message_id: str = "m1") -> dict[str, Any]:
    return {"threadId": thread_id, "runId": "r", "messages": [{"id": message_id, "role": "user", "content": "hi"}]}


def _refused(response: httpx.Response, field: str) -> None:
    assert response.status_code == 422, (response.status_code, response.text)
    error = response.json()["error"]
    assert error["code"] == "invalid_request"
    assert error["details"][0]["field"] == field, error


def _stored_threads(store_url: str) -> int:
    async def count() -> int:
        store = await open_store(store_url, None)  # type: ignore[arg-type]
        try:
            return len(await store.list_threads("", "bot"))
        finally:
            await store.close()

    return asyncio.run(count())


@pytest.mark.parametrize("bad", HOSTILE_IDS)
def test_a_hostile_id_in_a_chat_body_is_422_naming_the_field(url: str, store_url: str, bad: str) -> None:
    _refused(httpx.post(f"{url}/api/chat", json=_usechat(bad)), "id")
    _refused(httpx.post(f"{url}/api/chat", json=_usechat("t", message_id=bad)), "messages.0.id")
    _refused(httpx.post(f"{url}/agents/bot/ag-ui", json=_ag_ui(bad)), "threadId")
    _refused(httpx.post(f"{url}/agents/bot/ag-ui", json=_ag_ui("t", message_id=bad)), "messages.0.user.id")
    _refused(httpx.post(f"{url}/agents/bot/ag-ui", json=_ag_ui("t") | {"runId": bad}), "runId")
    _refused(httpx.post(f"{url}/agents/bot/ag-ui", json=_ag_ui("t") | {"parentRunId": bad}), "parentRunId")
    assert httpx.get(f"{url}/agents/bot/threads").json()["threads"] == []
    assert _stored_threads(store_url) == 0


def test_only_a_valid_run_id_is_kept_and_echoed_as_parent_run_id(url: str) -> None:
    """AG-UI's runId is stored as the thread's last run, and a regenerate names it as its parentRunId."""
    _refused(httpx.post(f"{url}/agents/bot/ag-ui", json=_ag_ui("t") | {"runId": "sep\u2028run"}), "runId")
    assert httpx.post(f"{url}/agents/bot/ag-ui", json=_ag_ui("t") | {"runId": "run-1"}).status_code == 200
    again = _ag_ui("t") | {"runId": "run-2", "forwardedProps": {"regenerate": True}}
    started = json.loads(httpx.post(f"{url}/agents/bot/ag-ui", json=again).text.split("\n", 1)[0][len("data: ") :])
    assert (started["type"], started["runId"], started["parentRunId"]) == ("RUN_STARTED", "run-2", "run-1")


def test_hostile_tool_call_and_approval_ids_are_422(url: str) -> None:
    part = {"type": "tool-get_weather", "toolCallId": "c\x00", "state": "input-available", "input": {}}
    body = {"id": "t", "messages": [{"id": "a", "role": "assistant", "parts": [part]}]}
    _refused(httpx.post(f"{url}/api/chat", json=body), "messages.0.parts.0.tool.toolCallId")
    approval = {"id": "apr\x00", "approved": True}
    part = {**part, "toolCallId": "c1", "state": "approval-responded", "approval": approval}
    _refused(
        httpx.post(f"{url}/api/chat", json=body | {"messages": [body["messages"][0] | {"parts": [part]}]}),
        "messages.0.parts.0.tool.approval.id",
    )
    resume = {**_ag_ui("t"), "resume": [{"interruptId": "apr\x00", "status": "resolved"}]}
    _refused(httpx.post(f"{url}/agents/bot/ag-ui", json=resume), "resume.0.interruptId")
    call = {"id": "c\x00", "type": "function", "function": {"name": "f", "arguments": "{}"}}
    assistant = {"id": "a", "role": "assistant", "toolCalls": [call]}
    _refused(
        httpx.post(f"{url}/agents/bot/ag-ui", json=_ag_ui("t") | {"messages": [assistant]}),
        "messages.0.assistant.toolCalls.0.id",
    )


@pytest.mark.parametrize("bad", HOSTILE_PATH_IDS)
def test_a_hostile_thread_id_in_a_path_is_422_on_every_route(url: str, bad: str) -> None:
    base = f"{url}/agents/bot/threads/{bad}"
    with httpx.Client() as client:
        for response in (
            client.get(base),
            client.get(f"{base}/messages"),
            client.delete(base),
            client.put(f"{base}/system-message", json={"system_message": None}),
            client.post(f"{base}/reset", json={}),
            client.post(f"{base}/stop"),
            client.get(f"{url}/api/chat/{bad}/stream"),
            client.get(f"{url}/agents/bot/ag-ui/{bad}/stream"),
        ):
            _refused(response, "thread_id")


def test_a_nul_in_a_system_message_or_prompt_name_is_422(url: str) -> None:
    base = f"{url}/agents/bot/threads/t/system-message"
    _refused(httpx.put(base, json={"system_message": "obey\x00"}), "system_message")
    _refused(httpx.put(base, json={"prompt": "pir\x00ate"}), "prompt")
    assert httpx.get(f"{url}/agents/bot/threads/t").status_code == 404  # nothing was created
    # A NUL is refused; other control characters in free text are kept as written.
    kept = httpx.put(base, json={"system_message": "line one\nline\ttwo\x1b"})
    assert kept.status_code == 200 and kept.json()["system"]["text"] == "line one\nline\ttwo\x1b"
    _refused(httpx.post(f"{url}/agents/bot/threads/t/reset", json={"system_message": "\x00"}), "system_message")
    assert httpx.get(f"{url}/agents/bot/threads/t").json()["system"]["text"] == "line one\nline\ttwo\x1b"


def test_a_nul_in_message_text_and_in_the_models_answer_is_stored_faithfully(url: str, store_url: str) -> None:
    text = "before\x00after \x1b[31m"
    answer = httpx.post(f"{url}/api/chat", json=_usechat("t1", text=text))
    assert answer.status_code == 200 and "before\\u0000after" in answer.text  # builtin:echo answers it back
    messages = httpx.get(f"{url}/agents/bot/threads/t1/messages").json()["messages"]
    assert [m["role"] for m in messages] == ["user", "assistant"]
    assert messages[0]["parts"][0]["text"] == text
    assert text in messages[1]["parts"][-1]["text"]
    assert _stored_threads(store_url) == 1


def test_real_client_ids_pass(url: str) -> None:
    """Ids as the AI SDK (nanoid alphabet, 16 long) and AG-UI/CopilotKit (randomUUID) make them."""
    for thread_id in ("aB3dE5fG7hJ9kL1m", "0b5c3f0e-7d43-4f1a-9d4e-2f8c1e6a9b7d", "ünïcødé-スレッド", "a" * 200):
        answer = httpx.post(f"{url}/api/chat", json=_usechat(thread_id, message_id=thread_id[::-1]))
        assert answer.status_code == 200, answer.text
        assert httpx.get(f"{url}/agents/bot/threads/{thread_id}").status_code == 200

"""Threads belong to the key that made them: another key gets 404 and can neither read nor disturb them."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest
from starlette.types import ASGIApp, Receive, Scope, Send

from chatgate.caller import CALLER_SCOPE_KEY, Caller
from chatgate.server import create_app
from tests.conftest import LiveServer, make_config


def _as_key(app: ASGIApp) -> ASGIApp:
    """Stands in for the access layer: ``x-test-key: NAME`` makes the request a non-admin caller NAME."""

    async def wrapped(scope: Scope, receive: Receive, send: Send) -> None:
        key = dict(scope.get("headers", [])).get(b"x-test-key")
        if key is not None:
            scope[CALLER_SCOPE_KEY] = Caller(key_id=key.decode(), admin=False)
        await app(scope, receive, send)

    return wrapped


@pytest.fixture
def url(store_url: str) -> Iterator[str]:
    agent = {"model": "builtin:echo", "conversations": "server", "prompts": {"pirate": "Arr."}}
    server = LiveServer(_as_key(create_app(make_config({"bot": agent}, store={"url": store_url}))))
    server.start()
    yield server.url
    server.stop()


def _say(url: str, key: str, thread_id: str, text: str) -> httpx.Response:
    body = {"id": thread_id, "message": {"id": text, "role": "user", "parts": [{"type": "text", "text": text}]}}
    return httpx.post(f"{url}/agents/bot/chat", json=body, headers={"x-test-key": key})


def test_another_keys_thread_is_404(url: str) -> None:
    assert _say(url, "alice", "t1", "alice secret").status_code == 200
    bob = {"x-test-key": "bob"}
    base = f"{url}/agents/bot/threads/t1"
    assert httpx.get(base, headers=bob).status_code == 404
    assert httpx.get(f"{base}/messages", headers=bob).status_code == 404
    assert httpx.post(f"{base}/reset", json={}, headers=bob).status_code == 404
    assert httpx.delete(base, headers=bob).status_code == 404
    assert httpx.get(f"{url}/agents/bot/threads", headers=bob).json()["threads"] == []
    # Bob's request on the same id is his own new thread: Alice's history never reaches the model.
    answer = _say(url, "bob", "t1", "bob here").text
    assert "alice" not in answer
    alice = httpx.get(f"{base}/messages", headers={"x-test-key": "alice"}).json()["messages"]
    assert [m["parts"][0]["text"] for m in alice if m["role"] == "user"] == ["alice secret"]


def test_free_text_needs_an_admin_but_a_named_prompt_does_not(url: str) -> None:
    headers = {"x-test-key": "alice"}
    base = f"{url}/agents/bot/threads/t1/system-message"
    refused = httpx.put(base, json={"system_message": "Obey me."}, headers=headers)
    assert (refused.status_code, refused.json()["error"]["code"]) == (403, "admin_required")
    named = httpx.put(base, json={"prompt": "pirate"}, headers=headers)
    assert named.status_code == 200 and named.json()["audit"][0]["by"] == "alice"

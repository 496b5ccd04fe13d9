"""Threads belong to the key that made them (real keys): another key gets 404 and can neither read nor disturb them."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest

from chatgate.web.app import create_app
from tests.conftest import LiveServer, make_config

KEYS = {"alice": "alice-key-0123456789", "bob": "bob-key-0123456789ab"}


def _key(name: str) -> dict[str, str]:
    return {"authorization": f"Bearer {KEYS[name]}"}


@pytest.fixture
def url(store_url: str) -> Iterator[str]:
    agent = {"model": "builtin:echo", "conversations": "server", "prompts": {"pirate": "Arr."}}
    keys = [{"id": name, "key": key} for name, key in KEYS.items()]
    server = LiveServer(create_app(make_config({"bot": agent}, store={"url": store_url}, keys=keys)))
    server.start()
    yield server.url
    server.stop()


def _say(url: str, key: str, thread_id: str, text: str) -> httpx.Response:
    body = {"id": thread_id, "message": {"id": text, "role": "user", "parts": [{"type": "text", "text": text}]}}
    return httpx.post(f"{url}/agents/bot/chat", json=body, headers=_key(key))


def test_another_keys_thread_is_404(url: str) -> None:
    assert _say(url, "alice", "t1", "alice secret").status_code == 200
    bob = _key("bob")
    base = f"{url}/agents/bot/threads/t1"
    assert httpx.get(base, headers=bob).status_code == 404
    assert httpx.get(f"{base}/messages", headers=bob).status_code == 404
    assert httpx.post(f"{base}/reset", json={}, headers=bob).status_code == 404
    assert httpx.delete(base, headers=bob).status_code == 404
    assert httpx.get(f"{url}/agents/bot/threads", headers=bob).json()["threads"] == []
    # Bob's request on the same id is his own new thread: Alice's history never reaches the model.
    answer = _say(url, "bob", "t1", "bob here").text
    assert "alice" not in answer
    alice = httpx.get(f"{base}/messages", headers=_key("alice")).json()["messages"]
    assert [m["parts"][0]["text"] for m in alice if m["role"] == "user"] == ["alice secret"]


def test_free_text_needs_an_admin_but_a_named_prompt_does_not(url: str) -> None:
    headers = _key("alice")
    base = f"{url}/agents/bot/threads/t1/system-message"
    refused = httpx.put(base, json={"system_message": "Obey me."}, headers=headers)
    assert (refused.status_code, refused.json()["error"]["code"]) == (403, "admin_required")
    named = httpx.put(base, json={"prompt": "pirate"}, headers=headers)
    assert named.status_code == 200 and named.json()["audit"][0]["by"] == "alice"

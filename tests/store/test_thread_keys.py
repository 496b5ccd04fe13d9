"""Threads with real API keys: each key sees only its own threads, and a key without the agent gets 403."""

from __future__ import annotations

from collections.abc import Callable

import httpx

from chatgate.config import Config
from tests.conftest import make_config

Serve = Callable[[Config], str]
KEYS = {"alice": "alice-key-0123456789", "bob": "bob-key-0123456789ab", "other": "other-key-0123456789"}


def _auth(who: str) -> dict[str, str]:
    return {"authorization": f"Bearer {KEYS[who]}"}


def test_threads_belong_to_the_key_that_made_them(serve: Serve, store_url: str) -> None:
    config = make_config(
        {"bot": {"model": "builtin:echo", "conversations": "server"}, "else": {"model": "builtin:echo"}},
        store={"url": store_url},
        keys=[
            {"id": "alice", "key": KEYS["alice"]},
            {"id": "bob", "key": KEYS["bob"]},
            {"id": "other", "key": KEYS["other"], "agents": ["else"]},
        ],
    )
    url = serve(config)
    body = {"id": "t1", "message": {"id": "u1", "role": "user", "parts": [{"type": "text", "text": "secret plans"}]}}
    with httpx.Client(base_url=url, timeout=30) as client:
        assert client.post("/agents/bot/chat", json=body, headers=_auth("alice")).status_code == 200
        mine = client.get("/agents/bot/threads/t1/messages", headers=_auth("alice"))
        assert mine.status_code == 200 and "secret plans" in mine.text
        assert [t["id"] for t in client.get("/agents/bot/threads", headers=_auth("alice")).json()["threads"]] == ["t1"]

        theirs = client.get("/agents/bot/threads/t1/messages", headers=_auth("bob"))
        assert theirs.status_code == 404 and "secret plans" not in theirs.text
        assert client.get("/agents/bot/threads", headers=_auth("bob")).json()["threads"] == []
        assert client.delete("/agents/bot/threads/t1", headers=_auth("bob")).status_code == 404

        refused = client.get("/agents/bot/threads", headers=_auth("other"))
        assert refused.status_code == 403 and refused.json()["error"]["code"] == "agent_not_allowed"
        assert client.get("/agents/bot/threads").status_code == 401
        assert client.get("/agents/bot/threads/t1/messages", headers=_auth("alice")).status_code == 200

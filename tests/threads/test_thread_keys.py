"""Threads with real API keys: each key sees only its own threads, and a key without the agent gets 403."""

from __future__ import annotations

import asyncio
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


def _slow_agent(store_url: str, *, max_concurrent_streams: int) -> Config:
    """A stored-thread agent answering a word each 0.2 s, and alice's key with that many stream slots."""
    return make_config(
        {"bot": {"model": "builtin:echo", "conversations": "server", "model_settings": {"delay": 0.2}}},
        store={"url": store_url},
        keys=[{"id": "alice", "key": KEYS["alice"], "max_concurrent_streams": max_concurrent_streams}],
    )


def test_a_stream_refused_for_its_slot_starts_no_run(serve: Serve, store_url: str) -> None:
    """A 429 for ``max_concurrent_streams`` comes before the turn: nothing committed, no model called."""
    url = serve(_slow_agent(store_url, max_concurrent_streams=1))

    def body(thread: str) -> dict[str, object]:
        return {"id": thread, "message": {"id": "u1", "role": "user", "parts": [{"type": "text", "text": "a b c"}]}}

    with httpx.Client(base_url=url, timeout=30) as client:
        with client.stream("POST", "/agents/bot/chat", json=body("held"), headers=_auth("alice")) as held:
            assert held.status_code == 200
            chunks = held.iter_raw()  # kept: a dropped iterator would close the response
            next(chunks)
            for thread in ("refused1", "refused2", "held"):
                refused = client.post("/agents/bot/chat", json=body(thread), headers=_auth("alice"))
                assert refused.status_code == 429 and refused.json()["error"]["code"] == "too_many_streams"
        threads = client.get("/agents/bot/threads", headers=_auth("alice")).json()["threads"]
        assert [t["id"] for t in threads] == ["held"]
        assert client.get("/agents/bot/threads/refused1/messages", headers=_auth("alice")).status_code == 404


def test_racing_streams_over_the_slot_limit_run_one_turn(serve: Serve, store_url: str) -> None:
    """Five new threads at once with one slot: one 200, four 429s, and one thread in the store."""
    url = serve(_slow_agent(store_url, max_concurrent_streams=1))

    async def race() -> list[int]:
        async with httpx.AsyncClient(base_url=url, timeout=30, headers=_auth("alice")) as client:
            bodies = [
                {"id": f"t{n}", "message": {"id": "u1", "role": "user", "parts": [{"type": "text", "text": "a b"}]}}
                for n in range(5)
            ]
            replies = await asyncio.gather(*(client.post("/agents/bot/chat", json=body) for body in bodies))
            return sorted(reply.status_code for reply in replies)

    assert asyncio.run(race()) == [200, 429, 429, 429, 429]
    threads = httpx.get(f"{url}/agents/bot/threads", headers=_auth("alice"), timeout=30).json()["threads"]
    assert len(threads) == 1


def test_a_turn_refused_after_its_slot_was_taken_gives_the_slot_back(serve: Serve, store_url: str) -> None:
    """409 on a busy thread releases the slot it held meanwhile: a third 409, not a 429, and room for more."""
    url = serve(_slow_agent(store_url, max_concurrent_streams=2))
    body = {"id": "t1", "message": {"id": "u1", "role": "user", "parts": [{"type": "text", "text": "a b c"}]}}
    with (
        httpx.Client(base_url=url, timeout=30, headers=_auth("alice")) as client,
        client.stream("POST", "/agents/bot/chat", json=body) as held,
    ):
        assert held.status_code == 200
        chunks = held.iter_raw()  # kept: a dropped iterator would close the response
        next(chunks)
        again = {**body, "message": {**body["message"], "id": "u2"}}
        codes = [client.post("/agents/bot/chat", json=again).status_code for _ in range(3)]
        assert codes == [409, 409, 409]
        assert client.post("/agents/bot/chat", json={**body, "id": "t2"}).status_code == 200

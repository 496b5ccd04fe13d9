"""A stop closes the upstream request: the fake OpenAI upstream sees its connection closed within a second."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from pathlib import Path

import httpx

from chatgate.config import Config
from chatgate.store import open_store
from tests.conftest import make_config
from tests.providers.fakes import Reply, fake_in_thread, openai_chunk
from tests.providers.support import provider_table
from tests.threads.test_stop import _follow, _wait_for

Serve = Callable[[Config], str]
SLOW = Reply(
    [piece for n in range(300) for piece in (openai_chunk({"content": f"w{n} "}), 0.05)]
    + [openai_chunk({}, "stop"), b"data: [DONE]\n\n"]
)


def test_stop_closes_the_upstream_connection_within_a_second(serve: Serve, store_url: str) -> None:
    with fake_in_thread(SLOW) as upstream:
        config = make_config(
            {"bot": {"model": "up:m", "conversations": "server"}},
            providers={"up": provider_table("openai", upstream.url)},
            store={"url": store_url},
        )
        url = serve(config)
        message = {"id": "u1", "role": "user", "parts": [{"type": "text", "text": "hello"}]}
        lines, reader = _follow(url, "/agents/bot/chat", "POST", {"id": "c1", "message": message})
        _wait_for(lines, '"text-delta"')
        assert upstream.open_connections == 1
        stopped_at = time.monotonic()
        assert httpx.post(f"{url}/agents/bot/threads/c1/stop").json() == {"stopped": True}
        deadline = stopped_at + 1.0
        while upstream.open_connections and time.monotonic() < deadline:
            time.sleep(0.01)
        assert upstream.open_connections == 0
        reader.join(timeout=5)
        assert lines[-1] == "data: [DONE]"
        answer = httpx.get(f"{url}/agents/bot/threads/c1/messages").json()["messages"][1]
        assert answer["metadata"]["chatgate"]["status"] == "partial"
        assert answer["parts"][-1]["text"].startswith("w0 ")


def test_deleting_a_thread_stops_its_running_turn_first(serve: Serve, store_url: str) -> None:
    with fake_in_thread(SLOW) as upstream:
        config = make_config(
            {"bot": {"model": "up:m", "conversations": "server"}},
            providers={"up": provider_table("openai", upstream.url)},
            store={"url": store_url},
        )
        url = serve(config)
        message = {"id": "u1", "role": "user", "parts": [{"type": "text", "text": "hello"}]}
        lines, reader = _follow(url, "/agents/bot/chat", "POST", {"id": "c1", "message": message})
        _wait_for(lines, '"text-delta"')
        assert upstream.open_connections == 1
        assert httpx.delete(f"{url}/agents/bot/threads/c1").status_code == 204
        reader.join(timeout=10)
        assert not reader.is_alive()  # the client's stream ended with the run
        deadline = time.monotonic() + 5
        while upstream.open_connections and time.monotonic() < deadline:
            time.sleep(0.01)
        assert upstream.open_connections == 0  # the model call was cancelled, not run to its end
        assert len(upstream.requests) == 1
        assert httpx.get(f"{url}/agents/bot/threads/c1/messages").status_code == 404
        assert httpx.get(f"{url}/agents/bot/threads").json()["threads"] == []
        assert asyncio.run(stored_rows(store_url)) == 0  # the stopped run saved nothing afterwards


async def stored_rows(store_url: str) -> int:
    """Messages and approvals left in the store, of any thread."""
    store = await open_store(store_url, Path.cwd())
    try:
        async with store._engine.read() as tx:
            rows = await tx.fetch("SELECT (SELECT COUNT(*) FROM messages) + (SELECT COUNT(*) FROM threads) AS n")
        return int(rows[0]["n"])
    finally:
        await store.close()

"""A stop closes the upstream request: the fake OpenAI upstream sees its connection closed within a second."""

from __future__ import annotations

import time
from collections.abc import Callable

import httpx

from chatgate.config import Config
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

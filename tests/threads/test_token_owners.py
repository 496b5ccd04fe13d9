"""Signed-in people own their stored threads as keys do: another person cannot list, read, stop or resume them.

Tokens come from the real OpenID provider on loopback (tests/oidc_provider.py); the store is SQLite and
PostgreSQL.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from typing import Any

import httpx

from chatgate.config import Config
from tests.conftest import make_config
from tests.oidc_provider import OpenIDProvider

Serve = Callable[[Config], str]
_TEXT = " ".join(f"word{n}" for n in range(24))
# Alice's run is stopped, never waited for: long enough (60 s at 0.1 s a word) to be running at her stop
# however slow the machine is, which a 3 s answer was not under load.
_LONG_TEXT = " ".join(f"word{n}" for n in range(600))


def _config(store_url: str, issuer: str) -> Config:
    agent = {"model": "builtin:echo", "conversations": "server", "model_settings": {"delay": 0.1}}
    return make_config(
        {"bot": agent},
        store={"url": store_url},
        keys=[{"id": "web", "key": "web-secret-0123456789"}],
        auth={"jwt": {"issuer": issuer, "audience": "chatgate"}},
    )


def _body(thread_id: str, text: str = _TEXT) -> dict[str, Any]:
    user = {"id": f"u-{thread_id}", "role": "user", "content": text}
    return {"threadId": thread_id, "runId": "r1", "messages": [user], "tools": [], "context": []}


def _start_and_hang_up(url: str, headers: dict[str, str], thread_id: str) -> None:
    body = _body(thread_id, _LONG_TEXT)
    with httpx.stream("POST", f"{url}/agents/bot/ag-ui", json=body, headers=headers, timeout=30) as reply:
        assert reply.status_code == 200
        for line in reply.iter_lines():
            if line.startswith("data: ") and json.loads(line[6:])["type"] == "TEXT_MESSAGE_CONTENT":
                return


def _wait_until_idle(url: str, headers: dict[str, str], thread_id: str) -> dict[str, Any]:
    for _ in range(300):
        thread: dict[str, Any] = httpx.get(f"{url}/agents/bot/threads/{thread_id}", headers=headers).json()
        if not thread["running"]:
            return thread
        time.sleep(0.05)
    raise AssertionError("the run never ended")


def test_a_second_person_cannot_see_or_touch_the_first_ones_threads(
    serve: Serve, store_url: str, oidc_provider: OpenIDProvider
) -> None:
    url = serve(_config(store_url, oidc_provider.issuer))
    alice = {"authorization": f"Bearer {oidc_provider.token('alice')}"}
    bob = {"authorization": f"Bearer {oidc_provider.token('bob')}"}
    key = {"authorization": "Bearer web-secret-0123456789"}
    _start_and_hang_up(url, alice, "t1")
    threads = f"{url}/agents/bot/threads"
    assert httpx.get(f"{threads}/t1", headers=alice).json()["running"]

    assert httpx.get(threads, headers=bob).json()["threads"] == []
    assert httpx.get(threads, headers=key).json()["threads"] == []
    assert httpx.get(f"{threads}/t1", headers=bob).status_code == 404
    assert httpx.get(f"{threads}/t1/messages", headers=bob).status_code == 404
    assert httpx.post(f"{threads}/t1/stop", headers=bob).status_code == 404
    assert httpx.get(f"{url}/agents/bot/ag-ui/t1/stream", headers=bob).status_code == 204  # nothing of his to resume
    assert httpx.delete(f"{threads}/t1", headers=bob).status_code == 404
    # The owner resumes her running thread: its stream replays from the start and goes on live.
    with httpx.stream("GET", f"{url}/agents/bot/ag-ui/t1/stream", headers=alice, timeout=30) as resumed:
        assert resumed.status_code == 200
        lines = resumed.iter_lines()  # kept: a dropped iterator would close the stream
        events: list[dict[str, Any]] = []
        for line in lines:
            if line.startswith("data: "):
                events.append(json.loads(line[6:]))
                if events[-1]["type"] == "TEXT_MESSAGE_CONTENT":
                    break
    assert events[0]["type"] == "RUN_STARTED" and events[0]["threadId"] == "t1"
    assert events[-1]["delta"].strip() == "System"  # builtin:echo's answer, from its first word

    assert httpx.post(f"{threads}/t1/stop", headers=alice).json() == {"stopped": True}
    _wait_until_idle(url, alice, "t1")
    assert [thread["id"] for thread in httpx.get(threads, headers=alice).json()["threads"]] == ["t1"]
    # The same thread id is bob's own thread: a new, separate one.
    assert httpx.post(f"{url}/agents/bot/ag-ui", json=_body("t1"), headers=bob).status_code == 200
    bob_messages = httpx.get(f"{threads}/t1/messages", headers=bob).json()["messages"]
    assert [message["role"] for message in bob_messages] == ["user", "assistant"]
    alice_messages = httpx.get(f"{threads}/t1/messages", headers=alice).json()["messages"]
    assert alice_messages[1]["parts"][-1]["text"] != bob_messages[1]["parts"][-1]["text"]  # alice's was stopped


def test_a_new_token_of_the_same_person_sees_their_threads(
    serve: Serve, store_url: str, oidc_provider: OpenIDProvider
) -> None:
    url = serve(_config(store_url, oidc_provider.issuer))
    first = {"authorization": f"Bearer {oidc_provider.token('alice')}"}
    assert httpx.post(f"{url}/agents/bot/ag-ui", json=_body("mine"), headers=first).status_code == 200
    later = {"authorization": f"Bearer {oidc_provider.token('alice')}"}
    assert [thread["id"] for thread in httpx.get(f"{url}/agents/bot/threads", headers=later).json()["threads"]] == [
        "mine"
    ]

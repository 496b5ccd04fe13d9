"""CopilotKit's runtime routes on chatgate (app/web/copilotkit.py), over real HTTP on a live server."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest

from chatgate.config import Config
from tests.conftest import make_config
from tests.threads.test_resume_ag_ui import drop_after_first_delta

Serve = Callable[[Config], str]
BASE = "/copilotkit"
KEYS = {"alice": "alice-key-0123456789", "bob": "bob-key-0123456789ab"}
_TEXT = " ".join(f"word{n}" for n in range(24))


def _config(tmp_path: Path, store_url: str | None = None, redis_url: str | None = None) -> Config:
    """``bot`` keeps threads and answers slowly; ``quick`` keeps none; alice may use only ``bot``.

    The store is ``store_url``, or a new SQLite file in ``tmp_path``; ``redis_url`` for replicas."""
    stored = {"model": "builtin:echo", "conversations": "server", "model_settings": {"delay": 0.1}}
    return make_config(
        {"bot": {**stored, "description": "the shop's bot"}, "quick": {"model": "builtin:echo"}},
        store={"url": store_url or f"sqlite:///{tmp_path / 'threads.db'}"},
        copilotkit={"path": BASE},
        server={"redis_url": redis_url} if redis_url else {},
        keys=[
            {"id": "alice", "key": KEYS["alice"], "agents": ["bot"]},
            {"id": "bob", "key": KEYS["bob"]},
        ],
    )


def _auth(who: str) -> dict[str, str]:
    return {"authorization": f"Bearer {KEYS[who]}"}


def _input(thread_id: str, *messages: dict[str, Any]) -> dict[str, Any]:
    """A RunAgentInput as CopilotKit's ``ProxiedCopilotRuntimeAgent`` posts it."""
    return {
        "threadId": thread_id,
        "runId": f"r-{thread_id}-{len(messages)}",
        "messages": list(messages),
        "tools": [],
        "context": [],
        "state": {},
        "forwardedProps": {},
    }


def _user(thread_id: str, text: str = _TEXT) -> dict[str, Any]:
    return {"id": f"u-{thread_id}", "role": "user", "content": text}


def _events(response: httpx.Response) -> list[dict[str, Any]]:
    return [json.loads(line[6:]) for line in response.text.splitlines() if line.startswith("data: ")]


def _post(url: str, path: str, who: str, body: Any) -> httpx.Response:
    return httpx.post(f"{url}{BASE}{path}", json=body, headers=_auth(who), timeout=60)


def _start_and_drop(url: str, thread_id: str, who: str = "alice") -> list[dict[str, Any]]:
    """Start a run on ``bot`` through the runtime route and hang up after its first text delta."""
    return drop_after_first_delta(url, thread_id, path=f"{BASE}/agent/bot/run", headers=_auth(who))


def _stored(url: str, thread_id: str, who: str = "alice") -> list[dict[str, Any]]:
    response = httpx.get(f"{url}/agents/bot/threads/{thread_id}/messages", headers=_auth(who), timeout=30)
    assert response.status_code == 200, response.text
    return list(response.json()["messages"])


def test_info_lists_the_callers_agents_and_advertises_only_what_is_served(serve: Serve, tmp_path: Path) -> None:
    url = serve(_config(tmp_path))
    alice = httpx.get(f"{url}{BASE}/info", headers=_auth("alice"), timeout=30).json()
    assert list(alice["agents"]) == ["bot"]
    bot = alice["agents"]["bot"]
    assert bot["name"] == "bot" and bot["description"] == "the shop's bot"
    assert bot["capabilities"] == httpx.get(f"{url}/agents/bot/ag-ui/capabilities", headers=_auth("alice")).json()
    assert alice["mode"] == "sse" and alice["suggestions"] is False
    assert alice["audioFileTranscriptionEnabled"] is False
    assert alice["threadEndpoints"] == {"list": True, "inspect": False, "mutations": True, "realtimeMetadata": False}
    bob = httpx.get(f"{url}{BASE}/info", headers=_auth("bob"), timeout=30).json()
    assert sorted(bob["agents"]) == ["bot", "quick"]
    assert httpx.get(f"{url}{BASE}/info", timeout=30).status_code == 401


def test_a_run_streams_the_agents_ag_ui_run(serve: Serve, tmp_path: Path) -> None:
    url = serve(_config(tmp_path))
    response = _post(url, "/agent/quick/run", "bob", _input("t1", _user("t1", "hello there")))
    assert response.status_code == 200 and response.headers["content-type"].startswith("text/event-stream")
    events = _events(response)
    assert events[0]["type"] == "RUN_STARTED" and events[-1]["type"] == "RUN_FINISHED"
    text = "".join(e["delta"] for e in events if e["type"] == "TEXT_MESSAGE_CONTENT")
    assert "Last user message: hello there" in text


@pytest.mark.parametrize(
    ("body", "code"),
    [
        ({"threadId": "t1"}, "invalid_request"),
        ([1, 2], "invalid_request"),
        ({**_input("t1"), "messages": "hi"}, "invalid_request"),
    ],
)
def test_a_bad_body_is_a_4xx_json_error_naming_it(serve: Serve, tmp_path: Path, body: Any, code: str) -> None:
    url = serve(_config(tmp_path))
    for route in ("run", "connect"):
        response = _post(url, f"/agent/bot/{route}", "alice", body)
        assert response.status_code == 422, response.text
        assert response.json()["error"]["code"] == code


def test_refusals_before_the_body(serve: Serve, tmp_path: Path) -> None:
    url = serve(_config(tmp_path))
    not_json = httpx.post(f"{url}{BASE}/agent/bot/run", content=b"hi", headers=_auth("alice"), timeout=30)
    assert not_json.status_code == 415 and not_json.json()["error"]["code"] == "unsupported_media_type"
    forbidden = _post(url, "/agent/quick/run", "alice", _input("t1", _user("t1")))
    assert forbidden.status_code == 403, forbidden.text
    unknown = _post(url, "/agent/nobody/run", "bob", _input("t1", _user("t1")))
    assert unknown.status_code == 404, unknown.text


@pytest.mark.parametrize(
    ("method", "path", "status", "code"),
    [
        ("POST", "/agent/bot/suggest", 501, "not_served"),
        ("POST", "/transcribe", 501, "not_served"),
        ("GET", "/threads/t1/events", 501, "not_served"),
        ("GET", "/threads/t1/state", 501, "not_served"),
        ("POST", "/threads/subscribe", 501, "not_served"),
        ("GET", "/memories", 501, "not_served"),
        ("POST", "/annotate", 501, "not_served"),
        ("GET", "/inspector-metadata", 501, "not_served"),
        ("GET", "/nothing/here", 404, "not_found"),
    ],
)
def test_routes_not_served_answer_in_the_runtimes_error_shape(
    serve: Serve, tmp_path: Path, method: str, path: str, status: int, code: str
) -> None:
    url = serve(_config(tmp_path))
    response = httpx.request(method, f"{url}{BASE}{path}", json={"method": "info"}, headers=_auth("bob"), timeout=30)
    assert response.status_code == status, response.text
    body = response.json()
    assert body["code"] == code and isinstance(body["error"], str) and body["message"]


def test_connect_follows_the_running_run_and_a_finished_one_is_only_its_snapshot(serve: Serve, tmp_path: Path) -> None:
    url = serve(_config(tmp_path))
    dropped = _start_and_drop(url, "t1")
    start = next(e for e in dropped if e["type"] == "TEXT_MESSAGE_START")
    kept = {"id": start["messageId"], "role": "assistant", "content": dropped[-1]["delta"]}
    # What the client holds goes with a connect; it never starts a run, whatever it holds.
    connected = _events(_post(url, "/agent/bot/connect", "alice", _input("t1", _user("t1"), kept)))
    types = [e["type"] for e in connected]
    assert types.count("RUN_STARTED") == 1 and types[1] == "MESSAGES_SNAPSHOT" and types[-1] == "RUN_FINISHED"
    assert [m["id"] for m in connected[1]["messages"]] == ["u-t1"]  # the partial answer is rebuilt, not doubled
    answer = "".join(e["delta"] for e in connected if e["type"] == "TEXT_MESSAGE_CONTENT")
    stored = _stored(url, "t1")
    assert [m["role"] for m in stored] == ["user", "assistant"] and stored[1]["parts"][-1]["text"] == answer
    # Over: a connect replays nothing already seen, only the thread as it is.
    again = _events(_post(url, "/agent/bot/connect", "alice", _input("t1", _user("t1"), kept)))
    assert [e["type"] for e in again] == ["RUN_STARTED", "MESSAGES_SNAPSHOT", "RUN_FINISHED"]
    assert [m["role"] for m in again[1]["messages"]] == ["user", "assistant"]
    # A new message sent to connect is not a turn: the thread still holds one answer.
    _post(url, "/agent/bot/connect", "alice", _input("t1", _user("t1"), kept, _user("t2", "more")))
    assert len(_stored(url, "t1")) == 2


def test_connect_on_an_agent_without_threads_is_an_empty_stream(serve: Serve, tmp_path: Path) -> None:
    url = serve(_config(tmp_path))
    response = _post(url, "/agent/quick/connect", "bob", _input("t1", _user("t1")))
    assert response.status_code == 200 and response.content == b""


def test_stop_ends_the_running_run(serve: Serve, tmp_path: Path) -> None:
    url = serve(_config(tmp_path))
    _start_and_drop(url, "t1")
    stop = _post(url, "/agent/bot/stop/t1", "alice", {})
    assert stop.status_code == 200 and stop.json() == {"stopped": True}
    connected = _events(_post(url, "/agent/bot/connect", "alice", _input("t1")))
    assert [e["type"] for e in connected] == ["RUN_STARTED", "MESSAGES_SNAPSHOT", "RUN_FINISHED"]
    stored = _stored(url, "t1")
    assert stored[1]["metadata"]["chatgate"]["status"] == "partial"
    assert len(stored[1]["parts"][-1]["text"].split()) < len(_TEXT.split())
    assert _post(url, "/agent/bot/stop/t1", "alice", {}).json() == {"stopped": False}


def test_another_key_cannot_run_connect_or_stop_on_the_first_ones_thread(serve: Serve, tmp_path: Path) -> None:
    url = serve(_config(tmp_path))
    _start_and_drop(url, "t1")
    assert _post(url, "/agent/bot/stop/t1", "bob", {}).status_code == 404
    connected = _events(_post(url, "/agent/bot/connect", "bob", _input("t1")))
    assert [e["type"] for e in connected] == ["RUN_STARTED", "MESSAGES_SNAPSHOT", "RUN_FINISHED"]
    assert connected[1]["messages"] == []  # bob's own thread t1: empty
    ran = _events(_post(url, "/agent/bot/run", "bob", _input("t1", _user("t1", "bob here"))))
    assert "alice" not in json.dumps(ran) and _TEXT not in json.dumps(ran)
    assert [m["role"] for m in _stored(url, "t1", "bob")] == ["user", "assistant"]
    alice = _events(_post(url, "/agent/bot/connect", "alice", _input("t1")))
    assert "bob here" not in json.dumps(alice)


def test_connect_and_stop_reach_a_run_on_another_replica(serve: Serve, tmp_path: Path, redis_url: str) -> None:
    """Two apps sharing one store and one Redis: a run started on A is followed and stopped through B."""
    config = _config(tmp_path, redis_url=redis_url)
    a, b = serve(config), serve(config)
    dropped = _start_and_drop(a, "t1")
    connected = _events(_post(b, "/agent/bot/connect", "alice", _input("t1", _user("t1"))))
    types = [e["type"] for e in connected]
    assert types[:2] == ["RUN_STARTED", "MESSAGES_SNAPSHOT"] and types[-1] == "RUN_FINISHED"
    assert connected[2 : len(dropped) + 1] == dropped[1:]  # the same run, replayed from B
    answer = "".join(e["delta"] for e in connected if e["type"] == "TEXT_MESSAGE_CONTENT")
    assert _stored(a, "t1")[1]["parts"][-1]["text"] == answer
    _start_and_drop(a, "t2")
    assert _post(b, "/agent/bot/stop/t2", "alice", {}).json() == {"stopped": True}
    ended = _events(_post(b, "/agent/bot/connect", "alice", _input("t2")))  # follows the run to its end
    assert ended[-1]["type"] == "RUN_FINISHED"
    assert _stored(b, "t2")[1]["metadata"]["chatgate"]["status"] == "partial"


def test_connect_from_last_seen_event_replays_only_what_the_client_has_not_seen(serve: Serve, tmp_path: Path) -> None:
    url = serve(_config(tmp_path))
    dropped = _start_and_drop(url, "t1")
    last = f"{dropped[0]['runId']}:{len(dropped) - 1}"  # the index of the last event read, from RUN_STARTED's 0
    rest = _events(_post(url, "/agent/bot/connect", "alice", {**_input("t1"), "lastSeenEventId": last}))
    whole = dropped + rest
    types = [e["type"] for e in whole]
    assert types.count("RUN_STARTED") == 1 and "MESSAGES_SNAPSHOT" not in types and types[-1] == "RUN_FINISHED"
    answer = "".join(e["delta"] for e in whole if e["type"] == "TEXT_MESSAGE_CONTENT")
    assert _stored(url, "t1")[1]["parts"][-1]["text"] == answer  # every word once: none doubled, none missed


def test_a_cursor_on_another_run_replays_the_run_whole(serve: Serve, tmp_path: Path) -> None:
    url = serve(_config(tmp_path))
    _start_and_drop(url, "t1")
    body = {**_input("t1"), "lastSeenEventId": "some-other-run:3"}
    types = [e["type"] for e in _events(_post(url, "/agent/bot/connect", "alice", body))]
    assert types[:2] == ["RUN_STARTED", "MESSAGES_SNAPSHOT"] and types[-1] == "RUN_FINISHED"


@pytest.mark.parametrize("cursor", ["r1", "r1:", ":3", "r1:-1", "r1:x", 7, "r1:1234567890"])
def test_a_malformed_last_seen_event_id_is_a_422(serve: Serve, tmp_path: Path, cursor: object) -> None:
    url = serve(_config(tmp_path))
    response = _post(url, "/agent/bot/connect", "alice", {**_input("t1"), "lastSeenEventId": cursor})
    assert response.status_code == 422 and response.json()["error"]["code"] == "invalid_event_id"


def test_the_agent_id_default_is_the_default_agent_unless_one_is_so_named(serve: Serve, tmp_path: Path) -> None:
    """``<CopilotChat />`` without an agentId asks for ``default``: chatgate's default agent answers."""
    shop = {"model": "builtin:echo", "conversations": "server", "default": True, "description": "the shop"}
    store = {"url": f"sqlite:///{tmp_path / 'threads.db'}"}
    url = serve(make_config({"shop": shop, "other": {"model": "builtin:echo"}}, store=store, copilotkit={"path": BASE}))
    info = httpx.get(f"{url}{BASE}/info", timeout=30).json()["agents"]
    assert sorted(info) == ["default", "other", "shop"]
    assert info["default"] == {**info["shop"], "name": "default"}
    ran = _events(httpx.post(f"{url}{BASE}/agent/default/run", json=_input("t1", _user("t1", "hi")), timeout=30))
    assert ran[-1]["type"] == "RUN_FINISHED"
    assert httpx.get(f"{url}/agents/shop/threads/t1", timeout=30).json()["id"] == "t1"  # stored under shop
    listed = httpx.get(f"{url}{BASE}/threads", params={"agentId": "default"}, timeout=30).json()["threads"]
    assert [(t["id"], t["agentId"]) for t in listed] == [("t1", "default")]
    stop = httpx.post(f"{url}{BASE}/agent/default/stop/t1", timeout=30)
    assert stop.json() == {"stopped": False}
    single = {"method": "agent/connect", "params": {"agentId": "default"}, "body": _input("t1")}
    connected = _events(httpx.post(f"{url}{BASE}", json=single, timeout=30))
    assert [m["role"] for m in connected[1]["messages"]] == ["user", "assistant"]
    named = make_config({"default": {"model": "builtin:echo"}, "shop": shop}, copilotkit={"path": BASE}, store=store)
    other = serve(named)
    assert sorted(httpx.get(f"{other}{BASE}/info", timeout=30).json()["agents"]) == ["default", "shop"]

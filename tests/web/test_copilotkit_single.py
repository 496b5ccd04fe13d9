"""CopilotKit's single-route transport on chatgate (app/web/copilotkit_single.py), over real HTTP."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest

from chatgate.config import Config
from tests.web.test_copilotkit import BASE, _auth, _config, _events, _input, _start_and_drop, _stored, _user

Serve = Callable[[Config], str]


def _call(url: str, who: str, envelope: Any) -> httpx.Response:
    return httpx.post(f"{url}{BASE}", json=envelope, headers=_auth(who), timeout=60)


def test_info_is_the_multi_route_info(serve: Serve, tmp_path: Path) -> None:
    url = serve(_config(tmp_path))
    single = _call(url, "alice", {"method": "info"})
    assert single.status_code == 200
    assert single.json() == httpx.get(f"{url}{BASE}/info", headers=_auth("alice"), timeout=30).json()


def test_a_run_streams_and_connect_and_stop_reach_the_thread(serve: Serve, tmp_path: Path) -> None:
    url = serve(_config(tmp_path))
    ran = _events(
        _call(
            url, "bob", {"method": "agent/run", "params": {"agentId": "quick"}, "body": _input("q", _user("q", "hi"))}
        )
    )
    assert ran[0]["type"] == "RUN_STARTED" and ran[-1]["type"] == "RUN_FINISHED"
    assert "Last user message: hi" in "".join(e["delta"] for e in ran if e["type"] == "TEXT_MESSAGE_CONTENT")
    _start_and_drop(url, "t1")
    stop = {"method": "agent/stop", "params": {"agentId": "bot", "threadId": "t1"}}
    assert _call(url, "bob", stop).status_code == 404  # another key's thread is none of bob's
    assert _call(url, "alice", stop).json() == {"stopped": True}
    connect = {"method": "agent/connect", "params": {"agentId": "bot"}, "body": _input("t1", _user("t1"))}
    connected = _events(_call(url, "alice", connect))
    assert [e["type"] for e in connected] == ["RUN_STARTED", "MESSAGES_SNAPSHOT", "RUN_FINISHED"]
    assert _stored(url, "t1")[1]["metadata"]["chatgate"]["status"] == "partial"


@pytest.mark.parametrize(
    ("envelope", "status", "problem"),
    [
        ({"method": "nothing"}, 400, "unsupported method 'nothing'"),
        ({"params": {}}, 400, "unsupported method None"),
        ({"method": "agent/run", "body": {}}, 400, "params.agentId"),
        ({"method": "agent/run", "params": {"agentId": " "}, "body": {}}, 400, "params.agentId"),
        ({"method": "agent/stop", "params": {"agentId": "bot"}}, 400, "params.threadId"),
        ({"method": "agent/run", "params": {"agentId": "bot"}}, 400, "body:"),
        ({"method": "agent/run", "params": {"agentId": "bot"}, "body": {"threadId": 1}}, 422, "threadId"),
        ({"method": "agent/run", "params": {"agentId": "quick"}, "body": _input("t1", _user("t1"))}, 403, "quick"),
        ({"method": "agent/suggest", "params": {"agentId": "bot"}, "body": {}}, 501, "'agent/suggest' method"),
        ({"method": "transcribe", "body": {}}, 501, "'transcribe' method"),
        ([1], 400, "a JSON object"),
    ],
)
def test_a_bad_envelope_is_a_4xx_json_error_naming_it(
    serve: Serve, tmp_path: Path, envelope: Any, status: int, problem: str
) -> None:
    url = serve(_config(tmp_path))
    response = _call(url, "alice", envelope)
    assert response.status_code == status, response.text
    assert problem in json.dumps(response.json())


def test_a_body_that_is_not_json_is_a_400(serve: Serve, tmp_path: Path) -> None:
    url = serve(_config(tmp_path))
    headers = {**_auth("alice"), "content-type": "application/json"}
    response = httpx.post(f"{url}{BASE}", content=b"{not json", headers=headers, timeout=30)
    assert response.status_code == 400 and response.json()["error"]["code"] == "invalid_request"
    deep = b"[" * 100 + b"]" * 100
    assert httpx.post(f"{url}{BASE}", content=deep, headers=headers, timeout=30).status_code == 422

"""One CopilotKit thread on chatgate (app/web/copilotkit_thread.py): messages, rename, archive, delete.

On both stores, over real HTTP: another key's thread is a 404 on every route and stays untouched.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest

from chatgate.config import Config
from tests.store.conftest import store_url
from tests.web.test_copilotkit import BASE, _auth, _config, _events, _input, _post, _user

__all__ = ["store_url"]

Serve = Callable[[Config], str]


def _call(url: str, method: str, path: str, who: str, body: Any = None, **query: str) -> httpx.Response:
    return httpx.request(method, f"{url}{BASE}{path}", json=body, params=query, headers=_auth(who), timeout=30)


def _turn(url: str, who: str, thread_id: str, text: str) -> None:
    _events(_post(url, "/agent/bot/run", who, _input(thread_id, _user(thread_id, text))))


def _listed(url: str, who: str, **query: str) -> list[dict[str, Any]]:
    response = _call(url, "GET", "/threads", who, agentId="bot", **query)
    assert response.status_code == 200, response.text
    return list(response.json()["threads"])


def test_messages_rename_archive_and_delete_on_the_callers_thread(serve: Serve, tmp_path: Path, store_url: str) -> None:
    url = serve(_config(tmp_path, store_url))
    _turn(url, "alice", "t1", "hello")
    _turn(url, "alice", "t2", "other")
    messages = _call(url, "GET", "/threads/t1/messages", "alice", agentId="bot").json()["messages"]
    assert [(m["id"], m["role"]) for m in messages] == [("u-t1", "user"), (messages[1]["id"], "assistant")]
    assert messages[0]["content"] == "hello" and messages[1]["content"]

    renamed = _call(url, "PATCH", "/threads/t1", "alice", {"agentId": "bot", "name": "  Greetings  "})
    assert renamed.status_code == 200, renamed.text
    assert renamed.json()["name"] == "Greetings" and renamed.json()["archived"] is False
    assert renamed.json()["id"] == "t1" and renamed.json()["agentId"] == "bot"
    assert {t["id"]: t["name"] for t in _listed(url, "alice")} == {"t1": "Greetings", "t2": "other"}
    # The same title on chatgate's own list: one field.
    own = httpx.get(f"{url}/agents/bot/threads", headers=_auth("alice"), timeout=30).json()["threads"]
    assert {t["id"]: t["title"] for t in own}["t1"] == "Greetings"

    archived = _call(url, "POST", "/threads/t1/archive", "alice", {"agentId": "bot"})
    assert archived.json() == {"threadId": "t1", "archived": True}
    assert [t["id"] for t in _listed(url, "alice")] == ["t2"]
    every = _listed(url, "alice", includeArchived="true")
    assert {t["id"]: t["archived"] for t in every} == {"t1": True, "t2": False}
    back = _call(url, "PATCH", "/threads/t1", "alice", {"agentId": "bot", "archived": False})
    assert back.json()["archived"] is False and back.json()["name"] == "Greetings"
    assert {t["id"] for t in _listed(url, "alice")} == {"t1", "t2"}

    deleted = _call(url, "DELETE", "/threads/t1", "alice", {"agentId": "bot"})
    assert deleted.json() == {"threadId": "t1", "deleted": True}
    assert [t["id"] for t in _listed(url, "alice")] == ["t2"]
    assert _call(url, "GET", "/threads/t1/messages", "alice", agentId="bot").status_code == 404


def test_another_keys_thread_is_404_on_every_route_and_untouched(serve: Serve, tmp_path: Path, store_url: str) -> None:
    url = serve(_config(tmp_path, store_url))
    _turn(url, "alice", "t1", "mine")
    attempts = [
        ("GET", "/threads/t1/messages", None),
        ("PATCH", "/threads/t1", {"agentId": "bot", "name": "taken"}),
        ("POST", "/threads/t1/archive", {"agentId": "bot"}),
        ("DELETE", "/threads/t1", {"agentId": "bot"}),
    ]
    for method, path, body in attempts:
        for thread_path in (path, path.replace("t1", "T1"), path.replace("t1", "t%31")):
            response = _call(url, method, thread_path, "bob", body, agentId="bot")
            assert response.status_code == 404, (method, thread_path, response.text)
            assert response.json()["error"]["code"] == "unknown_thread"
    (mine,) = _listed(url, "alice")
    assert mine["name"] == "mine" and mine["archived"] is False
    assert len(_call(url, "GET", "/threads/t1/messages", "alice", agentId="bot").json()["messages"]) == 2


def test_a_rename_reaches_the_title_field_a_later_answer_does_not_overwrite(serve: Serve, tmp_path: Path) -> None:
    url = serve(_config(tmp_path))
    _turn(url, "alice", "t1", "first")
    _call(url, "PATCH", "/threads/t1", "alice", {"agentId": "bot", "name": "Mine"})
    turn = _input("t1", _user("t1", "first"), {"id": "u2", "role": "user", "content": "second"})
    _events(_post(url, "/agent/bot/run", "alice", turn))
    assert _listed(url, "alice")[0]["name"] == "Mine"
    cleared = _call(url, "PATCH", "/threads/t1", "alice", {"agentId": "bot", "name": None})
    assert cleared.json()["name"] is None
    assert _listed(url, "alice")[0]["name"] == "first"  # untitled: the list shows the first question


@pytest.mark.parametrize(
    ("method", "path", "body", "status", "code"),
    [
        ("PATCH", "/threads/t1", {"name": "x"}, 422, "invalid_request"),
        ("PATCH", "/threads/t1", {"agentId": "bot"}, 422, "invalid_request"),
        ("PATCH", "/threads/t1", {"agentId": "bot", "name": 3}, 422, "invalid_request"),
        ("PATCH", "/threads/t1", {"agentId": "bot", "name": "   "}, 422, "invalid_request"),
        ("PATCH", "/threads/t1", {"agentId": "bot", "name": "x" * 81}, 422, "invalid_request"),
        ("PATCH", "/threads/t1", {"agentId": "bot", "name": "a\u0000b"}, 422, "invalid_request"),
        ("PATCH", "/threads/t1", {"agentId": "bot", "archived": "yes"}, 422, "invalid_request"),
        ("PATCH", "/threads/t1", ["agentId"], 422, "invalid_request"),
        ("POST", "/threads/t1/archive", {}, 422, "invalid_request"),
        ("DELETE", "/threads/t1", {"agentId": ""}, 422, "invalid_request"),
        ("DELETE", "/threads/t1", {"agentId": "nobody"}, 404, "unknown_agent"),
        ("DELETE", "/threads/t1", {"agentId": "quick"}, 403, None),
        ("PATCH", "/threads/t%00", {"agentId": "bot", "name": "x"}, 422, "invalid_request"),
        ("GET", "/threads/t1/messages", None, 404, "unknown_agent"),  # no agentId: "default", none here
    ],
)
def test_bad_input_is_a_4xx_naming_it(
    serve: Serve, tmp_path: Path, method: str, path: str, body: Any, status: int, code: str | None
) -> None:
    url = serve(_config(tmp_path))
    _turn(url, "alice", "t1", "hi")
    response = _call(url, method, path, "alice", body)
    assert response.status_code == status, response.text
    if code is not None:
        assert response.json()["error"]["code"] == code
    assert _listed(url, "alice")[0]["name"] == "hi"


def test_a_body_that_is_not_json_is_a_400(serve: Serve, tmp_path: Path) -> None:
    url = serve(_config(tmp_path))
    response = httpx.patch(f"{url}{BASE}/threads/t1", content=b"{nope", headers=_auth("alice"), timeout=30)
    assert response.status_code == 400 and response.json()["error"]["code"] == "invalid_request"

"""``PATCH /agents/{agent}/threads/{id}``: the owner renames or archives a thread (app/web/threads.py)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest

from chatgate.config import Config
from tests.store.conftest import store_url
from tests.web.test_copilotkit import _auth, _config, _events, _input, _post, _user

__all__ = ["store_url"]

Serve = Callable[[Config], str]


def _patch(url: str, thread_id: str, who: str, body: Any) -> httpx.Response:
    return httpx.patch(f"{url}/agents/bot/threads/{thread_id}", json=body, headers=_auth(who), timeout=30)


def _own_list(url: str, who: str) -> list[dict[str, Any]]:
    return list(httpx.get(f"{url}/agents/bot/threads", headers=_auth(who), timeout=30).json()["threads"])


def test_the_owner_renames_and_archives_and_the_list_shows_it(serve: Serve, tmp_path: Path, store_url: str) -> None:
    url = serve(_config(tmp_path, store_url))
    _events(_post(url, "/agent/bot/run", "alice", _input("t1", _user("t1", "hello"))))
    assert _own_list(url, "alice") == [
        {"id": "t1", "title": "hello", "archived": False, "updated_at": _own_list(url, "alice")[0]["updated_at"]}
    ]
    renamed = _patch(url, "t1", "alice", {"title": "Greetings", "archived": True})
    assert renamed.status_code == 200, renamed.text
    assert renamed.json()["title"] == "Greetings" and renamed.json()["archived"] is True
    (listed,) = _own_list(url, "alice")
    assert listed["title"] == "Greetings" and listed["archived"] is True  # chatgate's list shows archived ones
    assert _patch(url, "t1", "alice", {"title": None}).json()["title"] is None
    assert _own_list(url, "alice")[0]["title"] == "hello"
    # Another key's thread of the same id is none of bob's: 404, and alice's stays as it was.
    for thread_id in ("t1", "T1"):
        refused = _patch(url, thread_id, "bob", {"title": "mine now"})
        assert refused.status_code == 404 and refused.json()["error"]["code"] == "unknown_thread"
    assert _own_list(url, "alice")[0]["archived"] is True


@pytest.mark.parametrize(
    "body",
    [{}, {"name": "x"}, {"title": "x", "extra": 1}, {"title": ""}, {"title": "x" * 81}, {"archived": 1}, [1]],
)
def test_a_bad_body_is_a_422_naming_it(serve: Serve, tmp_path: Path, body: Any) -> None:
    url = serve(_config(tmp_path))
    _events(_post(url, "/agent/bot/run", "alice", _input("t1", _user("t1", "hello"))))
    response = _patch(url, "t1", "alice", body)
    assert response.status_code == 422, response.text
    assert response.json()["error"]["code"] == "invalid_request" and response.json()["error"]["message"]

"""CopilotKit's thread list on chatgate (app/web/copilotkit_threads.py): scoped, paged, on both stores."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import httpx
import pytest

from chatgate.config import Config
from tests.store.conftest import store_url
from tests.web.test_copilotkit import BASE, _auth, _config, _events, _input, _post, _user

__all__ = ["store_url"]

Serve = Callable[[Config], str]


def _list(url: str, who: str, **query: str) -> httpx.Response:
    return httpx.get(f"{url}{BASE}/threads", params=query, headers=_auth(who), timeout=30)


def test_the_list_pages_through_the_callers_threads_only(serve: Serve, tmp_path: Path, store_url: str) -> None:
    url = serve(_config(tmp_path, store_url))
    for n in range(5):  # quick answers: a word every 0.1 s on a one-word question's echo
        _events(_post(url, "/agent/bot/run", "alice", _input(f"a{n}", _user(f"a{n}", f"alice {n}"))))
    _events(_post(url, "/agent/bot/run", "bob", _input("b0", _user("b0", "bob's"))))
    seen: list[str] = []
    cursor: dict[str, str] = {}
    for _ in range(3):
        page = _list(url, "alice", agentId="bot", limit="2", **cursor).json()
        seen += [thread["id"] for thread in page["threads"]]
        if page["nextCursor"] is None:
            break
        cursor = {"cursor": page["nextCursor"]}
    assert seen == ["a4", "a3", "a2", "a1", "a0"]  # most recently updated first, each once
    whole = _list(url, "alice", agentId="bot").json()
    assert whole["nextCursor"] is None and [t["id"] for t in whole["threads"]] == seen
    first = whole["threads"][0]
    assert first["name"] == "alice 4" and first["agentId"] == "bot" and first["archived"] is False
    assert first["createdAt"].endswith("Z") and first["updatedAt"] >= first["createdAt"]
    assert [t["id"] for t in _list(url, "bob", agentId="bot").json()["threads"]] == ["b0"]
    assert _list(url, "bob", agentId="quick").json() == {"threads": [], "nextCursor": None}


@pytest.mark.parametrize(
    ("query", "status", "code"),
    [
        ({}, 422, "invalid_request"),
        ({"agentId": "bot", "limit": "0"}, 422, "invalid_request"),
        ({"agentId": "bot", "limit": "201"}, 422, "invalid_request"),
        ({"agentId": "bot", "limit": "-1"}, 422, "invalid_request"),
        ({"agentId": "bot", "cursor": "nope"}, 422, "invalid_cursor"),
        ({"agentId": "bot", "includeArchived": "yes"}, 422, "invalid_request"),
        ({"agentId": "bot", "cursor": "WzEsMl0"}, 422, "invalid_cursor"),  # [1,2]
        ({"agentId": "quick"}, 403, None),
        ({"agentId": "nobody"}, 404, None),
    ],
)
def test_a_bad_query_is_a_4xx_naming_it(
    serve: Serve, tmp_path: Path, query: dict[str, str], status: int, code: str | None
) -> None:
    url = serve(_config(tmp_path))
    response = _list(url, "alice", **query)
    assert response.status_code == status, response.text
    if code is not None:
        assert response.json()["error"]["code"] == code

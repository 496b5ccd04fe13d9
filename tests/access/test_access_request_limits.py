"""[server] size limits on one request, over the wire in both protocols: each a 413 naming its limit."""

from collections.abc import Callable
from typing import Any

import httpx
import pytest

from chatgate.config import Config
from tests.conftest import make_config

Serve = Callable[[Config], str]
LIMITS = {"max_messages": 3, "max_parts_per_message": 2, "max_text_chars": 40, "max_tools": 1}


@pytest.fixture
def base(serve: Serve) -> str:
    return serve(make_config({"bot": {"model": "builtin:echo", "default": True}}, server=LIMITS))


def ag_ui(messages: list[dict[str, Any]], tools: int = 0) -> dict[str, Any]:
    tool = {"description": "", "parameters": {"type": "object", "properties": {}}}
    return {
        "threadId": "t",
        "runId": "r",
        "messages": messages,
        "tools": [{**tool, "name": f"t{i}"} for i in range(tools)],
    }


def ag_user(text: str, n: int = 0) -> dict[str, Any]:
    return {"id": f"u{n}", "role": "user", "content": text}


def use_chat(*parts: list[dict[str, Any]]) -> dict[str, Any]:
    messages = [{"id": f"m{i}", "role": "user", "parts": p} for i, p in enumerate(parts)]
    return {"id": "c", "messages": messages, "trigger": "submit-message"}


def text(value: str) -> dict[str, Any]:
    return {"type": "text", "text": value}


def refused(base: str, path: str, body: dict[str, Any]) -> str:
    response = httpx.post(base + path, json=body)
    assert response.status_code == 413, response.text
    error = response.json()["error"]
    assert error["code"] == "limit_exceeded"
    limit: str = error["details"][0]["limit"]
    assert limit in error["message"]
    return limit


def test_within_every_limit_streams(base: str) -> None:
    assert httpx.post(f"{base}/ag-ui", json=ag_ui([ag_user("short")], tools=1)).status_code == 200
    assert httpx.post(f"{base}/api/chat", json=use_chat([text("a"), text("b")])).status_code == 200


def test_too_many_messages(base: str) -> None:
    assert refused(base, "/ag-ui", ag_ui([ag_user("x", n) for n in range(4)])) == "max_messages"
    assert refused(base, "/api/chat", use_chat(*[[text("x")]] * 4)) == "max_messages"


def test_too_many_parts_in_one_message(base: str) -> None:
    assert refused(base, "/api/chat", use_chat([text("a"), text("b"), text("c")])) == "max_parts_per_message"


def test_too_much_text_in_total(base: str) -> None:
    assert refused(base, "/ag-ui", ag_ui([ag_user("x" * 21, 1), ag_user("y" * 20, 2)])) == "max_text_chars"
    assert refused(base, "/api/chat", use_chat([text("x" * 41)])) == "max_text_chars"
    system = {"id": "s", "role": "system", "content": "z" * 41}  # stripped later, but still read and counted
    assert refused(base, "/ag-ui", ag_ui([system, ag_user("hi")])) == "max_text_chars"


def test_too_many_tools(base: str) -> None:
    assert refused(base, "/ag-ui", ag_ui([ag_user("hi")], tools=2)) == "max_tools"

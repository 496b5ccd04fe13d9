"""A client that hangs up: the run goes on and is saved whole (default), or is cut off and saved partial."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import httpx
import pytest

from chatgate.config import Config
from tests.conftest import make_config

Serve = Callable[[Config], str]


def _hang_up_after_first_delta(url: str) -> None:
    body = {"id": "c1", "message": {"id": "u1", "role": "user", "parts": [{"type": "text", "text": "a b c d e f"}]}}
    with httpx.stream("POST", f"{url}/agents/bot/chat", json=body, timeout=30) as response:
        for line in response.iter_lines():
            if '"text-delta"' in line:
                break


def _settled(url: str) -> Any:
    deadline = time.monotonic() + 20
    while httpx.get(f"{url}/agents/bot/threads/c1").json()["running"]:
        assert time.monotonic() < deadline
        time.sleep(0.1)
    return httpx.get(f"{url}/agents/bot/threads/c1/messages").json()["messages"]


@pytest.mark.parametrize(("finish", "status"), [(True, None), (False, "partial")])
def test_a_hang_up(serve: Serve, store_url: str, finish: bool, status: str | None) -> None:
    agent = {"model": "builtin:echo", "conversations": "server", "model_settings": {"delay": 0.1}}
    url = serve(make_config({"bot": agent}, store={"url": store_url, "finish_on_disconnect": finish}))
    _hang_up_after_first_delta(url)
    messages = _settled(url)
    answer = messages[1]
    assert answer.get("metadata", {}).get("chatgate", {}).get("status") == status
    text = answer["parts"][-1]["text"]
    if finish:
        assert text.endswith("Last user message: a b c d e f")
    else:
        assert len(text) > 0 and not text.endswith("e f")

"""A run log that cannot be reached refuses the run before any byte, before the thread is even taken."""

from __future__ import annotations

import socket
from collections.abc import Callable

import httpx

from chatgate.config import Config
from tests.conftest import make_config

Serve = Callable[[Config], str]


def test_an_unreachable_redis_is_a_503_and_nothing_is_stored(serve: Serve, store_url: str) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]  # nothing listens here once the probe closes
    agent = {"model": "builtin:echo", "conversations": "server"}
    url = serve(
        make_config({"bot": agent}, store={"url": store_url}, server={"redis_url": f"redis://127.0.0.1:{port}"})
    )
    message = {"id": "u1", "role": "user", "parts": [{"type": "text", "text": "hi"}]}
    response = httpx.post(f"{url}/agents/bot/chat", json={"id": "c1", "message": message}, timeout=30)
    assert response.status_code == 503 and response.json()["error"]["code"] == "run_log_unavailable"
    assert httpx.get(f"{url}/agents/bot/threads/c1").status_code == 404  # the log is opened before the take

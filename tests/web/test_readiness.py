"""``GET /readyz``: 200 when the config is loaded and every configured dependency answers, else 503 naming it."""

import asyncio
import socket
from collections.abc import Callable

import httpx
import pytest

from chatgate.config import Config
from chatgate.web import readiness
from chatgate.web.app import create_app
from chatgate.web.readiness import add_check
from tests.conftest import LiveServer, make_config

AGENTS = {"bot": {"model": "builtin:echo", "default": True}}


def dead_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def test_ready_without_dependencies(serve: Callable[[Config], str]) -> None:
    response = httpx.get(f"{serve(make_config(AGENTS))}/readyz")
    assert (response.status_code, response.json()) == (200, {"status": "ready", "checked": []})


def test_ready_when_redis_answers(serve: Callable[[Config], str], redis_url: str) -> None:
    response = httpx.get(f"{serve(make_config(AGENTS, server={'redis_url': redis_url}))}/readyz")
    assert (response.status_code, response.json()) == (200, {"status": "ready", "checked": ["redis"]})


def test_not_ready_when_redis_is_down_and_liveness_stays_ok(serve: Callable[[Config], str]) -> None:
    url = serve(make_config(AGENTS, server={"redis_url": f"redis://:hunter2@127.0.0.1:{dead_port()}/0"}))
    response = httpx.get(f"{url}/readyz")
    assert (response.status_code, response.json()) == (503, {"status": "not ready", "down": ["redis"]})
    assert "hunter2" not in response.text
    assert httpx.get(f"{url}/healthz").status_code == 200


def test_a_check_that_hangs_counts_as_down(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(readiness, "CHECK_TIMEOUT", 0.2)
    app = create_app(make_config(AGENTS))

    async def hangs() -> None:
        await asyncio.sleep(30)

    async def answers() -> None:
        return None

    add_check(app, "store", hangs)
    add_check(app, "cache", answers)
    server = LiveServer(app)
    server.start()
    try:
        response = httpx.get(f"{server.url}/readyz")
    finally:
        server.stop()
    assert (response.status_code, response.json()) == (503, {"status": "not ready", "down": ["store"]})

"""``GET /readyz``: 200 when the config is loaded and every configured dependency answers, else 503 naming it."""

import asyncio
import json
import socket
from collections.abc import Callable
from pathlib import Path

import httpx
import pytest
from cryptography.hazmat.primitives.asymmetric import ec
from jwt.algorithms import ECAlgorithm
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from chatgate.config import Config
from chatgate.web import readiness
from chatgate.web.app import create_app
from chatgate.web.readiness import add_check
from tests.conftest import LiveServer, make_config
from tests.servers import postgres_server

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


def test_not_ready_while_postgresql_is_down_and_ready_once_it_is_back() -> None:
    agent = {"model": "builtin:echo", "conversations": "server"}
    with postgres_server() as database:  # its own cluster: this test stops it
        server = LiveServer(create_app(make_config({"bot": agent}, store={"url": database.url})))
        server.start()
        try:
            up = httpx.get(f"{server.url}/readyz")
            assert (up.status_code, up.json()) == (200, {"status": "ready", "checked": ["store"]})
            database.stop()
            down = httpx.get(f"{server.url}/readyz", timeout=10)
            assert (down.status_code, down.json()) == (503, {"status": "not ready", "down": ["store"]})
            database.start()
            back = httpx.get(f"{server.url}/readyz", timeout=10)
            assert (back.status_code, back.json()) == (200, {"status": "ready", "checked": ["store"]})
        finally:
            server.stop()


def test_a_sqlite_store_is_checked(serve: Callable[[Config], str], tmp_path: Path) -> None:
    agent = {"model": "builtin:echo", "conversations": "server"}
    config = make_config({"bot": agent}, store={"url": f"sqlite:///{tmp_path / 'threads.db'}"})
    response = httpx.get(f"{serve(config)}/readyz")
    assert (response.status_code, response.json()) == (200, {"status": "ready", "checked": ["store"]})


class SigningKeys:
    """A JWKS endpoint of one EC key that counts its fetches, and can be stopped (the provider goes down)."""

    def __init__(self) -> None:
        public = ec.generate_private_key(ec.SECP256R1()).public_key()
        self.jwks = {"keys": [{**json.loads(ECAlgorithm.to_jwk(public)), "kid": "k1", "use": "sig"}]}
        self.fetches = 0
        self.server = LiveServer(Starlette(routes=[Route("/jwks", self.serve)]))

    async def serve(self, request: Request) -> Response:
        self.fetches += 1
        return JSONResponse(self.jwks)


def jwt_config(jwks_url: str) -> Config:
    settings = {"issuer": "https://id.example.com/", "audience": "chatgate", "jwks_url": jwks_url}
    return make_config(AGENTS, auth={"jwt": settings})


def test_the_identity_providers_keys_are_checked_and_once_fetched_kept(serve: Callable[[Config], str]) -> None:
    keys = SigningKeys()
    keys.server.start()
    url = serve(jwt_config(f"{keys.server.url}/jwks"))
    first = httpx.get(f"{url}/readyz")
    assert (first.status_code, first.json()) == (200, {"status": "ready", "checked": ["identity"]})
    assert keys.fetches == 1
    keys.server.stop()  # the provider is down, but the keys already known still verify tokens
    assert [httpx.get(f"{url}/readyz").status_code for _ in range(3)] == [200] * 3
    assert keys.fetches == 1


def test_not_ready_when_no_signing_key_could_ever_be_fetched(serve: Callable[[Config], str]) -> None:
    url = serve(jwt_config(f"http://127.0.0.1:{dead_port()}/jwks"))
    response = httpx.get(f"{url}/readyz")
    assert (response.status_code, response.json()) == (503, {"status": "not ready", "down": ["identity"]})

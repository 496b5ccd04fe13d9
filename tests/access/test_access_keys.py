"""API keys against a live server: who gets in, which agents each key sees, and what never leaks."""

import hashlib
import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest
from starlette.datastructures import Headers

from chatgate.access import KeyRing
from chatgate.caller import LOCAL
from chatgate.config import Config, load_config
from chatgate.errors import RequestError
from chatgate.web.app import create_app
from tests.config.test_reload import wait_for
from tests.conftest import LiveServer, make_config

Serve = Callable[[Config], str]

WEB_KEY = "web-secret-0123456789"
OPS_KEY = "ops-secret-0123456789"
AGENTS = {
    "support": {"model": "builtin:echo", "default": True},
    "internal": {"model": "builtin:echo"},
}
USER = {"id": "u1", "role": "user", "content": "hi"}


def keyed_config(**server: Any) -> Config:
    return make_config(
        AGENTS,
        keys=[
            {"id": "web", "key": WEB_KEY, "agents": ["support"]},
            {"id": "ops", "sha256": hashlib.sha256(OPS_KEY.encode()).hexdigest(), "admin": True},
        ],
        server=server,
    )


def run(base: str, agent: str | None, headers: dict[str, str]) -> httpx.Response:
    path = f"/agents/{agent}/ag-ui" if agent else "/ag-ui"
    body = {"threadId": "t", "runId": "r", "messages": [USER]}
    return httpx.post(base + path, json=body, headers=headers)


@pytest.fixture
def base(serve: Serve) -> str:
    return serve(keyed_config())


def test_no_key_is_401_with_a_bearer_challenge(base: str) -> None:
    response = run(base, "support", {})
    assert response.status_code == 401
    assert response.headers["www-authenticate"].startswith("Bearer")
    assert response.json()["error"]["code"] == "missing_key"


@pytest.mark.parametrize(
    "headers",
    [
        {"authorization": "Bearer not-a-key-of-ours-at-all"},
        {"x-api-key": "not-a-key-of-ours-at-all"},
        {"authorization": f"Basic {WEB_KEY}"},  # the right secret under the wrong scheme
        {"authorization": f"Bearer {WEB_KEY}x"},
        {"authorization": f"Bearer {hashlib.sha256(OPS_KEY.encode()).hexdigest()}"},  # the digest is not the key
    ],
)
def test_an_unknown_key_is_401(base: str, headers: dict[str, str]) -> None:
    response = run(base, "support", headers)
    assert response.status_code == 401
    assert response.json()["error"]["code"] in ("invalid_key", "missing_key")


@pytest.mark.parametrize(
    "headers",
    [{"authorization": f"Bearer {WEB_KEY}"}, {"authorization": f"bearer  {WEB_KEY}"}, {"x-api-key": WEB_KEY}],
)
def test_a_key_is_accepted_as_bearer_or_x_api_key(base: str, headers: dict[str, str]) -> None:
    response = run(base, "support", headers)
    assert response.status_code == 200
    assert "RUN_FINISHED" in response.text


def test_a_key_given_by_its_sha256_works(base: str) -> None:
    for agent in ("support", "internal"):
        assert run(base, agent, {"authorization": f"Bearer {OPS_KEY}"}).status_code == 200


def test_an_agent_the_key_may_not_use_is_403_on_every_route(base: str) -> None:
    web = {"authorization": f"Bearer {WEB_KEY}"}
    response = run(base, "internal", web)
    assert response.status_code == 403
    assert response.json()["error"]["code"] == "agent_not_allowed"
    resume = httpx.get(f"{base}/agents/internal/chat/t1/stream", headers=web)
    assert resume.status_code == 403


def test_the_short_route_checks_the_default_agent(serve: Serve) -> None:
    config = make_config(AGENTS, keys=[{"id": "web", "key": WEB_KEY, "agents": ["internal"]}])
    base = serve(config)
    assert run(base, None, {"x-api-key": WEB_KEY}).status_code == 403  # the default is "support"


def test_agents_lists_only_the_keys_agents(base: str) -> None:
    def names(key: str) -> list[str]:
        response = httpx.get(f"{base}/agents", headers={"authorization": f"Bearer {key}"})
        assert response.status_code == 200
        return [agent["name"] for agent in response.json()["agents"]]

    assert names(WEB_KEY) == ["support"]
    assert names(OPS_KEY) == ["support", "internal"]
    assert httpx.get(f"{base}/agents").status_code == 401


def test_healthz_stays_open(base: str) -> None:
    assert httpx.get(f"{base}/healthz").status_code == 200


def test_without_keys_every_request_is_local(serve: Serve) -> None:
    base = serve(make_config(AGENTS))
    assert run(base, "internal", {}).status_code == 200
    assert run(base, "internal", {"authorization": "Bearer anything-at-all-here"}).status_code == 200


def test_secrets_never_reach_the_log_or_the_repr(base: str, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    run(base, "support", {"authorization": f"Bearer {WEB_KEY}"})
    run(base, "support", {"authorization": "Bearer wrong-secret-0123456789"})
    config = keyed_config()
    text = caplog.text + repr(config) + str(config.keys)
    for secret in (WEB_KEY, OPS_KEY, "wrong-secret-0123456789", hashlib.sha256(OPS_KEY.encode()).hexdigest()):
        assert secret not in text


def test_only_a_trusted_key_may_name_the_user() -> None:
    config = make_config(
        AGENTS,
        keys=[
            {"id": "backend", "key": "backend-secret-0123456789", "trusted_user_header": True},
            {"id": "browser", "key": "browser-secret-0123456789"},
        ],
    )
    ring = KeyRing(config)
    caller = ring.authenticate(Headers({"x-api-key": "backend-secret-0123456789", "x-chatgate-user": "alice"}))
    assert (caller.key_id, caller.user, caller.owner) == ("backend", "alice", "backend/alice")
    with pytest.raises(RequestError) as refused:
        ring.authenticate(Headers({"x-api-key": "browser-secret-0123456789", "x-chatgate-user": "alice"}))
    assert (refused.value.status, refused.value.code) == (403, "user_header_not_allowed")
    with pytest.raises(RequestError) as bad:
        ring.authenticate(Headers({"x-api-key": "backend-secret-0123456789", "x-chatgate-user": " "}))
    assert bad.value.code == "invalid_user"
    assert KeyRing(make_config(AGENTS)).authenticate(Headers({"x-chatgate-user": "x"})) is LOCAL


def test_a_key_without_agents_may_use_every_agent_and_carries_admin() -> None:
    ring = KeyRing(keyed_config())
    web = ring.authenticate(Headers({"authorization": f"Bearer {WEB_KEY}"}))
    ops = ring.authenticate(Headers({"authorization": f"Bearer {OPS_KEY}"}))
    assert (web.agents, web.admin) == (frozenset({"support"}), False)
    assert (ops.agents, ops.admin) == (None, True)


def test_a_reload_adds_and_revokes_keys_without_a_restart(tmp_path: Path) -> None:
    path = tmp_path / "c.toml"
    agent = '[agents.bot]\nmodel = "builtin:echo"\n'
    path.write_text(agent)
    server = LiveServer(create_app(load_config(path), config_path=path))
    server.start()
    try:
        assert httpx.get(f"{server.url}/agents").status_code == 200
        path.write_text(agent + f'\n[[keys]]\nid = "web"\nkey = "{WEB_KEY}"\n')
        assert wait_for(lambda: httpx.get(f"{server.url}/agents").status_code == 401)
        assert httpx.get(f"{server.url}/agents", headers={"x-api-key": WEB_KEY}).status_code == 200
        path.write_text(agent + f'\n[[keys]]\nid = "web"\nkey = "{OPS_KEY}"\n')  # the web secret is rotated
        assert wait_for(lambda: httpx.get(f"{server.url}/agents", headers={"x-api-key": WEB_KEY}).status_code == 401)
        assert httpx.get(f"{server.url}/agents", headers={"x-api-key": OPS_KEY}).status_code == 200
    finally:
        server.stop()

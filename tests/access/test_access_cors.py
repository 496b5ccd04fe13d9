"""CORS as a browser does it, against a live server: the preflight, then the request, allowed and refused."""

import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import httpx
import pytest

from chatgate.config import Config
from chatgate.errors import ConfigError
from tests.conftest import make_config

Serve = Callable[[Config], str]

APP = "https://app.example.com"
KEY = "cors-secret-0123456789"
AGENTS = {"bot": {"model": "builtin:echo", "default": True}}
ROUTES = ["/api/chat", "/ag-ui", "/agents/bot/chat", "/agents/bot/ag-ui", "/agents", "/agents/bot/chat/t1/stream"]
BODY = {"threadId": "t", "runId": "r", "messages": [{"id": "u1", "role": "user", "content": "hi"}]}


@pytest.fixture
def base(serve: Serve) -> str:
    return serve(make_config(AGENTS, keys=[{"id": "web", "key": KEY}], server={"cors_origins": [APP]}))


def preflight(
    base: str, path: str, origin: str, headers: str = "content-type,authorization,x-api-key"
) -> httpx.Response:
    return httpx.options(
        base + path,
        headers={"origin": origin, "access-control-request-method": "POST", "access-control-request-headers": headers},
    )


@pytest.mark.parametrize("path", ROUTES)
def test_the_preflight_allows_the_headers_usechat_and_httpagent_send(base: str, path: str) -> None:
    response = preflight(base, path, APP, "content-type,authorization,x-api-key,x-chatgate-user,x-request-id")
    assert response.status_code == 200
    assert response.headers["access-control-allow-origin"] == APP
    allowed = {h.strip() for h in response.headers["access-control-allow-headers"].lower().split(",")}
    assert {"content-type", "authorization", "x-api-key", "x-chatgate-user", "x-request-id"} <= allowed
    assert "POST" in response.headers["access-control-allow-methods"]


def test_a_cross_origin_request_from_an_allowed_origin_can_be_read(base: str) -> None:
    response = httpx.post(f"{base}/ag-ui", json=BODY, headers={"origin": APP, "authorization": f"Bearer {KEY}"})
    assert response.status_code == 200
    assert response.headers["access-control-allow-origin"] == APP
    assert "x-request-id" in response.headers["access-control-expose-headers"]
    refused = httpx.post(f"{base}/ag-ui", json=BODY, headers={"origin": APP})  # a 401 the page can read too
    assert refused.status_code == 401
    assert refused.headers["access-control-allow-origin"] == APP


@pytest.mark.parametrize("origin", ["https://evil.example.com", "https://app.example.com.evil.com", "null"])
def test_a_refused_origin_gets_no_cors_headers(base: str, origin: str) -> None:
    answer = preflight(base, "/api/chat", origin)
    assert answer.status_code == 403
    assert answer.json()["error"]["code"] == "cors_refused"
    assert not [name for name in answer.headers if name.startswith("access-control-")]
    response = httpx.post(f"{base}/ag-ui", json=BODY, headers={"origin": origin, "authorization": f"Bearer {KEY}"})
    assert not [name for name in response.headers if name.startswith("access-control-")]


def test_a_preflight_asking_for_another_header_is_refused(base: str) -> None:
    answer = preflight(base, "/api/chat", APP, "content-type,x-custom")
    assert answer.status_code == 400
    assert answer.json()["error"]["code"] == "cors_refused"
    assert "access-control-allow-origin" not in answer.headers


def test_without_cors_origins_a_preflight_gets_no_cors_headers(serve: Serve) -> None:
    base = serve(make_config(AGENTS))
    answer = preflight(base, "/api/chat", APP)
    assert answer.status_code == 405
    assert "access-control-allow-origin" not in answer.headers


def test_any_origin_is_allowed_only_without_keys(serve: Serve) -> None:
    base = serve(make_config(AGENTS, server={"cors_origins": ["*"]}))
    assert preflight(base, "/api/chat", "https://anywhere.example").headers["access-control-allow-origin"] == "*"
    with pytest.raises(ConfigError, match=r'server.cors_origins: "\*" is allowed only without \[\[keys\]\]'):
        make_config(AGENTS, keys=[{"id": "web", "key": KEY}], server={"cors_origins": ["*"]})


@pytest.mark.parametrize("origin", ["https://app.example.com/", "app.example.com", "https://app.example.com/path"])
def test_origins_are_exact(origin: str) -> None:
    with pytest.raises(ConfigError, match=r"server\.cors_origins"):
        make_config(AGENTS, server={"cors_origins": [origin]})


def test_the_preflight_allows_the_tracing_headers_by_default(base: str) -> None:
    response = preflight(base, "/api/chat", APP, "content-type,traceparent,tracestate,baggage,sentry-trace")
    assert response.status_code == 200, response.text
    allowed = {h.strip() for h in response.headers["access-control-allow-headers"].lower().split(",")}
    assert {"traceparent", "tracestate", "baggage", "sentry-trace"} <= allowed


def test_cors_headers_adds_headers_and_others_stay_refused(serve: Serve) -> None:
    server = {"cors_origins": [APP], "cors_headers": ["X-Tenant-Id"]}
    base = serve(make_config(AGENTS, keys=[{"id": "web", "key": KEY}], server=server))
    assert preflight(base, "/api/chat", APP, "content-type,x-tenant-id,traceparent").status_code == 200
    refused = preflight(base, "/api/chat", APP, "content-type,x-tenant-id,x-other")
    assert refused.status_code == 400 and refused.json()["error"]["code"] == "cors_refused"


@pytest.mark.parametrize("name", ["*", "x tenant", "x-tenant:", ""])
def test_cors_headers_must_be_header_names(name: str) -> None:
    with pytest.raises(ConfigError, match=r"server\.cors_headers.*header names are HTTP tokens"):
        make_config(AGENTS, server={"cors_origins": [APP], "cors_headers": [name]})


def test_check_config_refuses_a_bad_cors_header(tmp_path: Path) -> None:
    path = tmp_path / "c.toml"
    path.write_text('[server]\ncors_origins = ["https://app.example.com"]\ncors_headers = ["x tenant"]\n')
    command = [str(Path(sys.executable).with_name("chatgate")), "check-config", str(path)]
    result = subprocess.run(command, capture_output=True, text=True, check=False)
    assert result.returncode == 1
    assert "server.cors_headers" in result.stderr and "'x tenant'" in result.stderr

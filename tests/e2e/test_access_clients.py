"""API keys, limits and CORS as the real clients meet them: HttpAgent and the ``ai`` chat class send headers.

@ag-ui/client's HttpAgent takes ``headers`` in its config; the ``ai`` package's DefaultChatTransport
takes ``headers`` too. Both runners report a refused request instead of failing (tests/clients/*.mjs).
"""

import json
from collections.abc import Callable
from typing import Any

import pytest

from chatgate.config import Config
from tests.conftest import make_config, run_node_client

Serve = Callable[[Config], str]

WEB_KEY = "web-client-secret-0123"
OPS_KEY = "ops-client-secret-0123"
APP = "https://app.example.com"
AGENTS = {
    "support": {"model": "builtin:echo", "default": True, "vercel_ai_version": "v6"},
    "internal": {"model": "builtin:echo", "vercel_ai_version": "v6"},
}


@pytest.fixture
def base(serve: Serve) -> str:
    config = make_config(
        AGENTS,
        keys=[
            {"id": "web", "key": WEB_KEY, "agents": ["support"], "rpm": 3},
            {"id": "ops", "key": OPS_KEY},
        ],
        server={"cors_origins": [APP]},
    )
    return serve(config)


def http_agent(url: str, headers: dict[str, str]) -> dict[str, Any]:
    request = {
        "url": url,
        "headers": headers,
        "expectHttpError": True,
        "input": {"messages": [{"id": "u1", "role": "user", "content": "Hello"}]},
    }
    result: dict[str, Any] = run_node_client("ag_ui_run.mjs", request)
    return result


def chat(url: str, headers: dict[str, str], *texts: str) -> dict[str, Any]:
    steps = [{"sendMessage": {"text": text}} for text in texts]
    request = {"url": url, "version": 6, "headers": headers, "expectError": True, "steps": steps}
    result: dict[str, Any] = run_node_client("vercel_ai_chat.mjs", request)
    return result


def error_code(result: dict[str, Any]) -> str:
    code: str = json.loads(result["errors"][0])["error"]["code"]
    return code


def test_http_agent_with_a_key_runs(base: str) -> None:
    result = http_agent(f"{base}/ag-ui", {"authorization": f"Bearer {WEB_KEY}"})
    assert "httpError" not in result
    assert result["messages"][-1]["content"].endswith("Last user message: Hello")


def test_http_agent_without_a_key_or_with_a_wrong_one_gets_401(base: str) -> None:
    for headers in ({}, {"authorization": "Bearer wrong-secret-0123456"}):
        error = http_agent(f"{base}/ag-ui", headers)["httpError"]
        assert error["status"] == 401
        assert error["payload"]["error"]["code"] in ("missing_key", "invalid_key")


def test_http_agent_on_an_agent_the_key_may_not_use_gets_403(base: str) -> None:
    error = http_agent(f"{base}/agents/internal/ag-ui", {"x-api-key": WEB_KEY})["httpError"]
    assert (error["status"], error["payload"]["error"]["code"]) == (403, "agent_not_allowed")
    assert "httpError" not in http_agent(f"{base}/agents/internal/ag-ui", {"x-api-key": OPS_KEY})


def test_http_agent_over_its_rpm_gets_429(base: str) -> None:
    statuses = [
        http_agent(f"{base}/ag-ui", {"x-api-key": WEB_KEY}).get("httpError", {}).get("status") for _ in range(4)
    ]
    assert statuses == [None, None, None, 429]


def test_the_ai_chat_with_a_key_runs(base: str) -> None:
    result = chat(f"{base}/api/chat", {"x-api-key": WEB_KEY}, "Hi there")
    assert result["errors"] == []
    assert [request["status"] for request in result["requests"]] == [200]
    assert result["messages"][-1]["role"] == "assistant"


def test_the_ai_chat_gets_401_and_403(base: str) -> None:
    assert error_code(chat(f"{base}/api/chat", {}, "Hi")) == "missing_key"
    result = chat(f"{base}/agents/internal/chat", {"authorization": f"Bearer {WEB_KEY}"}, "Hi")
    assert result["requests"][0]["status"] == 403
    assert error_code(result) == "agent_not_allowed"


def test_the_ai_chat_over_its_rpm_gets_429_with_retry_after(base: str) -> None:
    result = chat(f"{base}/api/chat", {"x-api-key": WEB_KEY}, "one", "two", "three", "four")
    assert [request["status"] for request in result["requests"]] == [200, 200, 200, 429]
    assert 1 <= int(result["requests"][-1]["headers"]["retry-after"]) <= 60
    assert error_code(result) == "rate_limited"


def test_the_ai_chat_cross_origin_allowed_and_refused(base: str) -> None:
    allowed = chat(f"{base}/api/chat", {"x-api-key": OPS_KEY, "origin": APP}, "Hi")
    assert allowed["requests"][0]["headers"]["access-control-allow-origin"] == APP
    refused = chat(f"{base}/api/chat", {"x-api-key": OPS_KEY, "origin": "https://evil.example.com"}, "Hi")
    assert not [name for name in refused["requests"][0]["headers"] if name.startswith("access-control-")]

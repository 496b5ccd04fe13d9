"""Routes and request checks over real HTTP: every refusal is a JSON 4xx naming the problem."""

from collections.abc import Callable

import httpx
import pytest

from chatgate.config import Config
from tests.conftest import make_config, run_node_client

ROUTES = ["/api/chat", "/ag-ui", "/agents/bot/chat", "/agents/bot/ag-ui"]


@pytest.fixture
def url(serve: Callable[[Config], str]) -> str:
    config = make_config(
        {
            "bot": {"model": "builtin:echo", "system_prompt": "SECRET PROMPT", "default": True},
            "other": {"model": "builtin:echo", "manage_system_prompt": "client", "description": "second"},
        },
        server={"max_body_bytes": 2048},
    )
    return serve(config)


def error_of(response: httpx.Response) -> dict[str, str]:
    assert response.headers["content-type"] == "application/json"
    error: dict[str, str] = response.json()["error"]
    return error


def test_healthz(url: str) -> None:
    assert httpx.get(f"{url}/healthz").json() == {"status": "ok"}


def test_agents_lists_name_model_policy_and_routes_but_never_the_prompt(url: str) -> None:
    response = httpx.get(f"{url}/agents")
    assert "SECRET" not in response.text
    bot, other = response.json()["agents"]
    assert (bot["name"], bot["model"], bot["manage_system_prompt"], bot["default"]) == (
        "bot",
        "builtin:echo",
        "server",
        True,
    )
    assert bot["protocols"] == {"ag-ui": "/agents/bot/ag-ui", "vercel-ai": "/agents/bot/chat"}
    assert (other["manage_system_prompt"], other["default"], other["description"]) == ("client", False, "second")


@pytest.mark.parametrize("route", ROUTES)
def test_a_body_that_is_not_json_is_400(url: str, route: str) -> None:
    response = httpx.post(f"{url}{route}", content=b"{not json", headers={"content-type": "application/json"})
    assert response.status_code == 400
    assert error_of(response)["code"] == "invalid_json"


@pytest.mark.parametrize("route", ROUTES)
def test_a_body_of_the_wrong_shape_is_422_naming_the_field(url: str, route: str) -> None:
    response = httpx.post(f"{url}{route}", json={"messages": "not a list"})
    assert response.status_code == 422
    error = error_of(response)
    assert error["code"] == "invalid_request"
    assert "messages" in error["message"]


@pytest.mark.parametrize("route", ROUTES)
def test_a_body_that_is_not_sent_as_json_is_415(url: str, route: str) -> None:
    response = httpx.post(f"{url}{route}", content=b"{}", headers={"content-type": "text/plain"})
    assert response.status_code == 415
    assert "application/json" in error_of(response)["message"]


@pytest.mark.parametrize("route", ROUTES)
def test_a_body_over_the_limit_is_413_whether_declared_or_streamed(url: str, route: str) -> None:
    big = b'{"pad": "' + b"x" * 4096 + b'"}'
    declared = httpx.post(f"{url}{route}", content=big, headers={"content-type": "application/json"})
    assert declared.status_code == 413
    assert "2048" in error_of(declared)["message"]

    def chunks():  # type: ignore[no-untyped-def]
        yield big[:1000]
        yield big[1000:]

    streamed = httpx.post(f"{url}{route}", content=chunks(), headers={"content-type": "application/json"})
    assert streamed.status_code == 413


@pytest.mark.parametrize("suffix", ["chat", "ag-ui"])
def test_an_unknown_agent_is_404_naming_it(url: str, suffix: str) -> None:
    response = httpx.post(f"{url}/agents/nobody/{suffix}", json={})
    assert response.status_code == 404
    assert error_of(response) == {"code": "unknown_agent", "message": "no agent named 'nobody'; GET /agents lists them"}


def test_unknown_routes_and_methods_get_json_errors(url: str) -> None:
    missing = httpx.get(f"{url}/nope")
    assert missing.status_code == 404
    assert error_of(missing)["code"] == "not_found"
    wrong_method = httpx.get(f"{url}/api/chat")
    assert wrong_method.status_code == 405
    assert error_of(wrong_method)["code"] == "method_not_allowed"


def test_without_a_default_agent_the_short_routes_say_so(serve: Callable[[Config], str]) -> None:
    url = serve(make_config({"a": {"model": "builtin:echo"}, "b": {"model": "builtin:echo"}}))
    response = httpx.post(f"{url}/api/chat", json={})
    assert response.status_code == 404
    assert error_of(response)["code"] == "no_default_agent"


@pytest.mark.parametrize("version", [5, 6, 7])
def test_use_chat_resume_is_told_there_is_no_stream_to_resume(url: str, version: int) -> None:
    for api in (f"{url}/api/chat", f"{url}/agents/bot/chat"):
        result = run_node_client("vercel_ai_resume.mjs", {"url": api, "version": version, "chatId": "chat-1"})
        assert result == {"resumed": False}


def test_resume_for_an_unknown_agent_is_404(url: str) -> None:
    assert httpx.get(f"{url}/agents/bot/chat/c1/stream").status_code == 204
    response = httpx.get(f"{url}/agents/nobody/chat/c1/stream")
    assert response.status_code == 404
    assert error_of(response)["code"] == "unknown_agent"

"""chatgate mounted under /llm in a FastAPI app, its lifespan entered from the host's (docs/embedding.md)."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from typing import Any
from urllib.parse import urljoin

import httpx
import pytest
from fastapi import FastAPI

from chatgate import create_app
from tests.conftest import LiveServer, make_config, run_node_client

KEY = "embedded-key-0123456789"
AUTH = {"authorization": f"Bearer {KEY}"}


def _config() -> Any:
    return make_config(
        {"bot": {"model": "builtin:echo", "system_prompt": "You are mounted.", "default": True}},
        keys=[{"id": "web", "key": KEY}],
    )


@pytest.fixture(scope="module")
def host() -> Iterator[str]:
    """A FastAPI app with a route of its own and chatgate under /llm; its base URL."""
    chat = create_app(_config())

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        async with chat.lifespan(app):
            yield

    app = FastAPI(lifespan=lifespan)

    @app.get("/")
    async def home() -> dict[str, str]:
        return {"app": "the host's own"}

    app.mount("/llm", chat)
    server = LiveServer(app)
    server.start()
    yield server.url
    server.stop()


def _text(parts: list[dict[str, Any]]) -> str:
    return "".join(part.get("text", "") for part in parts if part["type"] == "text")


def test_both_protocols_stream_through_the_mount(host: str) -> None:
    steps = [{"sendMessage": {"text": "via useChat"}}]
    chat = run_node_client(
        "vercel_ai_chat.mjs", {"url": f"{host}/llm/api/chat", "version": 6, "headers": AUTH, "steps": steps}
    )
    assert [message["role"] for message in chat["messages"]] == ["user", "assistant"]
    assert "Last user message: via useChat" in _text(chat["messages"][-1]["parts"])
    assert len(chat["requests"]) == 1
    said = [{"id": "u1", "role": "user", "content": "via AG-UI"}]
    run = run_node_client("ag_ui_run.mjs", {"url": f"{host}/llm/ag-ui", "headers": AUTH, "input": {"messages": said}})
    assert run.get("error") is None and run["events"][-1]["type"] == "RUN_FINISHED"
    assert "Last user message: via AG-UI" in run["messages"][-1]["content"]


def test_probes_are_open_under_the_prefix_and_the_rest_needs_the_key(host: str) -> None:
    for path in ("/llm/healthz", "/llm/readyz"):
        assert httpx.get(host + path).status_code == 200, path
    refused = httpx.get(f"{host}/llm/agents")
    assert refused.status_code == 401 and refused.json()["error"]["code"] == "missing_key"
    (agent,) = httpx.get(f"{host}/llm/agents", headers=AUTH).json()["agents"]
    assert agent["protocols"] == {"ag-ui": "/llm/agents/bot/ag-ui", "vercel-ai": "/llm/agents/bot/chat"}
    assert httpx.get(host + "/").json() == {"app": "the host's own"}


def test_the_chat_page_loads_its_script_under_the_prefix(host: str) -> None:
    page = httpx.get(f"{host}/llm", follow_redirects=True)  # the host's router adds the slash
    assert page.status_code == 200 and str(page.url) == f"{host}/llm/"
    sources = re.findall(r'(?:src|href)="([^"]+)"', page.text)
    assert sources == ["static/chat.css", "static/chat.js"]
    for source in sources:
        served = httpx.get(urljoin(str(page.url), source))  # open without a key, as the page asks for one
        assert served.status_code == 200 and served.url.path == f"/llm/{source}"
    script = httpx.get(f"{host}/llm/static/chat.js").text
    # Every call the page makes is relative to it ("agents/..."), so none escapes the prefix. (The ai
    # package's own default "/api/chat" stays in the bundle; the page always gives its transport a path.)
    assert re.findall(r"""["'`]/agents\b""", script) == []
    assert '"agents"' in script and "`agents/${encodeURIComponent(" in script


def test_a_mount_without_its_lifespan_answers_503_naming_the_fix() -> None:
    app = FastAPI()
    app.mount("/llm", create_app(_config()))
    server = LiveServer(app)
    server.start()
    try:
        response = httpx.get(f"{server.url}/llm/agents", headers=AUTH)
    finally:
        server.stop()
    assert response.status_code == 503
    error = response.json()["error"]
    assert error["code"] == "not_started" and "lifespan()" in error["message"]


def test_chatgate_s_lifespan_can_be_the_host_s_own() -> None:
    chat = create_app(_config())
    app = FastAPI(lifespan=chat.lifespan)
    app.mount("/llm", chat)
    server = LiveServer(app)
    server.start()
    try:
        assert chat.services.started
        (agent,) = httpx.get(f"{server.url}/llm/agents", headers=AUTH).json()["agents"]
    finally:
        server.stop()
    assert agent["name"] == "bot"
    assert not chat.services.started  # the host's shutdown closed it


async def test_the_lifespan_is_entered_once() -> None:
    chat = create_app(_config())
    async with chat.lifespan():
        assert chat.services.started
        with pytest.raises(RuntimeError, match="already running"):
            async with chat.lifespan():
                pass
    assert not chat.services.started

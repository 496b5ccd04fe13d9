"""Keepalive comments in a slow stream are ignored by both real clients."""

import httpx
import pytest

from tests.conftest import make_config, run_node_client
from tests.e2e.test_ag_ui_client import Serve

SLOW = {"model": "builtin:echo", "default": True, "model_settings": {"delay": 0.12}}


@pytest.fixture
def url(serve: Serve) -> str:
    return serve(make_config({"slow": SLOW}, server={"keepalive_seconds": 0.05}))


def test_the_slow_stream_really_carries_keepalive_comments(url: str) -> None:
    body = {"threadId": "t", "runId": "r", "messages": [{"id": "u", "role": "user", "content": "hi"}]}
    assert ": ping\n\n" in httpx.post(f"{url}/ag-ui", json=body, timeout=30).text


def test_ag_ui_client_ignores_keepalive_comments(url: str) -> None:
    messages = [{"id": "u", "role": "user", "content": "hi"}]
    result = run_node_client("ag_ui_run.mjs", {"url": f"{url}/ag-ui", "input": {"messages": messages}})
    assert result["events"][-1]["type"] == "RUN_FINISHED"
    assert result["messages"][-1]["content"] == "System prompt: (none)\nLast user message: hi"


@pytest.mark.parametrize("version", [5, 6, 7])
def test_use_chat_clients_ignore_keepalive_comments(serve: Serve, version: int) -> None:
    agent = {**SLOW, "vercel_ai_version": f"v{version}"}
    base = serve(make_config({"slow": agent}, server={"keepalive_seconds": 0.05}))
    body = {"id": "c", "messages": [{"id": "u", "role": "user", "parts": [{"type": "text", "text": "hi"}]}]}
    result = run_node_client("vercel_ai_run.mjs", {"url": f"{base}/api/chat", "version": version, "body": body})
    text = "".join(part["text"] for part in result["message"]["parts"] if part["type"] == "text")
    assert text == "System prompt: (none)\nLast user message: hi"

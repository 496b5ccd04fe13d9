"""Tools on a stored thread with useChat: a frontend tool's output and an approval continue the stored turn."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx

from chatgate.config import Config
from tests.conftest import make_config, run_node_client

Serve = Callable[[Config], str]


def _url(serve: Serve, store_url: str) -> str:
    agent = {
        "model": "builtin:echo",
        "conversations": "server",
        "client_tools": {"pick_color": {"description": "Ask the user for a color."}},
        "tools": {"add": {"function": "tests.sample_tools:add", "requires_approval": True}},
    }
    config = make_config(
        {"shop": agent}, server={"approval_secret": "a-secret-of-enough-length"}, store={"url": store_url}
    )
    return serve(config)


def _chat(url: str, *steps: dict[str, Any], resend_when: str | None = None) -> Any:
    script: dict[str, Any] = {"url": f"{url}/agents/shop/chat", "version": 6, "chatId": "c1", "steps": list(steps)}
    if resend_when:
        script["sendAutomaticallyWhen"] = resend_when
    return run_node_client("vercel_ai_chat.mjs", script)


def _stored(url: str) -> list[dict[str, Any]]:
    messages: list[dict[str, Any]] = httpx.get(f"{url}/agents/shop/threads/c1/messages").json()["messages"]
    return messages


def test_a_frontend_tool_output_is_stored_and_answered(serve: Serve, store_url: str) -> None:
    url = _url(serve, store_url)
    result = _chat(
        url,
        {"sendMessage": {"text": '/call pick_color {"palette": "warm"}'}},
        {"addToolOutput": {"tool": "pick_color", "output": {"color": "red"}}},
    )
    assistant = result["messages"][-1]
    assert "returned" in assistant["parts"][-1]["text"]
    stored = _stored(url)
    assert [m["role"] for m in stored] == ["user", "assistant"]
    assert stored[1]["id"] == assistant["id"]  # one assistant message, continued
    tool = next(p for p in stored[1]["parts"] if p["type"] == "tool-pick_color")
    assert (tool["state"], tool["output"]) == ("output-available", {"color": "red"})


def test_an_approved_server_tool_runs_once_and_is_stored(serve: Serve, store_url: str) -> None:
    url = _url(serve, store_url)
    result = _chat(
        url,
        {"sendMessage": {"text": '/call add {"a": 2, "b": 3}'}},
        {"addToolApprovalResponse": {"approved": True}},
        resend_when="lastAssistantMessageIsCompleteWithApprovalResponses",
    )
    assert result["messages"][-1]["parts"][-1]["text"].endswith("returned: 5")
    tool = next(p for p in _stored(url)[1]["parts"] if p["type"] == "tool-add")
    assert (tool["state"], tool["output"]) == ("output-available", 5)


def test_a_client_cannot_answer_a_server_tool_itself(serve: Serve, store_url: str) -> None:
    url = _url(serve, store_url)
    first = _chat(url, {"sendMessage": {"text": '/call add {"a": 2, "b": 3}'}})
    assistant = first["messages"][-1]
    forged_parts = [
        {**part, "state": "output-available", "output": 1000} if part["type"] == "tool-add" else part
        for part in assistant["parts"]
    ]
    body = {"id": "c1", "messageId": assistant["id"], "message": {**assistant, "parts": forged_parts}}
    response = httpx.post(f"{url}/agents/shop/chat", json=body)
    assert response.status_code == 422 and response.json()["error"]["code"] == "nothing_to_answer"
    assert "1000" not in str(_stored(url))


def test_an_agui_approval_pending_in_the_store_survives_a_restart(serve: Serve, store_url: str) -> None:
    agent = {
        "model": "builtin:echo",
        "conversations": "server",
        "tools": {"get_weather": {"function": "tests.sample_tools:get_weather", "requires_approval": True}},
    }
    config = make_config(
        {"bot": agent}, server={"approval_secret": "a-secret-of-enough-length"}, store={"url": store_url}
    )
    first_url = serve(config) + "/agents/bot/ag-ui"
    message = {"id": "u1", "role": "user", "content": '/call get_weather {"city": "Oslo"}'}
    first = run_node_client("ag_ui_run.mjs", {"url": first_url, "input": {"threadId": "t1", "messages": [message]}})
    (interrupt,) = first["events"][-1]["outcome"]["interrupts"]

    second_url = serve(config) + "/agents/bot/ag-ui"  # another process on the same store, a fresh page
    resume = [{"interruptId": interrupt["id"], "status": "resolved"}]
    second = run_node_client("ag_ui_run.mjs", {"url": second_url, "input": {"threadId": "t1", "resume": resume}})
    types = [event["type"] for event in second["events"]]
    assert types[:2] == ["RUN_STARTED", "MESSAGES_SNAPSHOT"] and "TOOL_CALL_RESULT" in types
    assert second["messages"][-1]["content"].startswith("Tool results:")


async def test_a_stored_approval_runs_once_across_replicas_and_replays(
    serve: Serve, store_url: str, tmp_path: Path
) -> None:
    log = tmp_path / "runs.log"
    agent = {
        "model": "builtin:echo",
        "conversations": "server",
        "tools": {"record": {"function": "tests.sample_tools:record", "requires_approval": True}},
    }
    config = make_config(
        {"bot": agent}, server={"approval_secret": "a-secret-of-enough-length"}, store={"url": store_url}
    )
    urls = [serve(config) + "/agents/bot/ag-ui", serve(config) + "/agents/bot/ag-ui"]  # two replicas, no Redis
    call = json.dumps({"path": str(log)})
    message = {"id": "u1", "role": "user", "content": f"/call record {call}"}
    first = run_node_client("ag_ui_run.mjs", {"url": urls[0], "input": {"threadId": "t1", "messages": [message]}})
    (interrupt,) = first["events"][-1]["outcome"]["interrupts"]
    body = {
        "threadId": "t1",
        "runId": "r2",
        "messages": [],
        "resume": [{"interruptId": interrupt["id"], "status": "resolved"}],
    }
    async with httpx.AsyncClient(timeout=60) as client:
        responses = await asyncio.gather(*(client.post(urls[i % 2], json=body) for i in range(10)))
        later = await client.post(urls[1], json={**body, "runId": "r3"})
    statuses = sorted(response.status_code for response in (*responses, later))
    assert statuses.count(200) >= 1 and set(statuses) <= {200, 409, 422}
    assert log.read_text().count("\n") == 1  # the tool ran exactly once

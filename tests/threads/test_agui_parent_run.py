"""``RUN_STARTED.parentRunId`` on a stored AG-UI thread: chatgate names the run a run answers or regenerates."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import httpx

from chatgate.config import Config
from tests.conftest import check_ag_ui_events, make_config

Serve = Callable[[Config], str]
ASK = {"id": "u1", "role": "user", "content": '/call pick_color {"palette": "warm"}'}


def _post(url: str, run_id: str, messages: list[dict[str, Any]], **extra: Any) -> list[dict[str, Any]]:
    body = {"threadId": "t1", "runId": run_id, "messages": messages, **extra}  # extra may name another thread
    response = httpx.post(f"{url}/agents/shop/ag-ui", json=body, timeout=30)
    assert response.status_code == 200, response.text
    return [json.loads(line[len("data: ") :]) for line in response.text.splitlines() if line]


def test_a_continuation_and_a_regenerate_name_the_run_they_follow(serve: Serve, store_url: str) -> None:
    agent = {
        "model": "builtin:echo",
        "conversations": "server",
        "client_tools": {"pick_color": {"description": "Ask the user for a color."}},
        "tools": {"get_weather": {"function": "tests.sample_tools:get_weather", "requires_approval": True}},
    }
    secret = {"approval_secret": "a-secret-of-enough-length"}
    url = serve(make_config({"shop": agent}, server=secret, store={"url": store_url}))
    first = _post(url, "r1", [ASK])  # ends waiting on the frontend tool
    call_id = next(e["toolCallId"] for e in first if e["type"] == "TOOL_CALL_START")
    answer = {"id": "tool-1", "role": "tool", "toolCallId": call_id, "content": '{"color": "red"}'}
    second = _post(url, "r2", [ASK, answer])  # answers r1's pending call
    regenerated = _post(url, "r3", [ASK], forwardedProps={"regenerate": True})  # replaces r2's answer
    named = _post(url, "r4", [ASK], parentRunId="mine", forwardedProps={"regenerate": True})
    follow_up = _post(url, "r5", [ASK, {"id": "u2", "role": "user", "content": "thanks"}])  # a new turn
    refused = httpx.post(
        f"{url}/agents/shop/ag-ui",
        json={"threadId": "t1", "runId": "r6", "messages": [], "forwardedProps": {"regenerate": "yes"}},
    )
    weather = {"id": "w1", "role": "user", "content": '/call get_weather {"city": "Oslo"}'}
    asked = _post(url, "r7", [weather], threadId="t2")  # ends on an approval request
    (interrupt,) = asked[-1]["outcome"]["interrupts"]
    approved = _post(url, "r8", [], threadId="t2", resume=[{"interruptId": interrupt["id"], "status": "resolved"}])
    assert [e["type"] for e in approved].count("TOOL_CALL_RESULT") == 1
    assert (asked[0].get("parentRunId"), approved[0]["parentRunId"]) == (None, "r7")
    check_ag_ui_events([*first, *second, *regenerated, *named, *follow_up, *asked, *approved])
    parents = [run[0].get("parentRunId") for run in (first, second, regenerated, named, follow_up)]
    assert parents == [None, "r1", "r2", "mine", None]
    # the regenerate dropped the answer (r1's call, its result, r2's text) and answered the question again
    snapshot = next(e for e in regenerated if e["type"] == "MESSAGES_SNAPSHOT")["messages"]
    assert [m["role"] for m in snapshot] == ["user"]
    assert [e["type"] for e in regenerated].count("TOOL_CALL_START") == 1
    assert refused.status_code == 422 and refused.json()["error"]["code"] == "invalid_regenerate"
    stored = httpx.get(f"{url}/agents/shop/threads/t1/messages").json()["messages"]
    assert [m["role"] for m in stored] == ["user", "assistant", "user", "assistant"]  # as useChat shows it

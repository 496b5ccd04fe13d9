"""Driving an approval over raw HTTP in both protocols, for the single-use tests.

``ask`` makes builtin:echo call the ``record`` tool (which appends a line to a file) and returns the
paused call; ``answer`` sends the approval back, with any token spelling, as the protocol's client would.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import httpx

from tests.conftest import run_node_client

__all__ = [
    "PROTOCOLS",
    "Paused",
    "answer",
    "answer_body",
    "answer_with_real_client",
    "ask",
    "events_of",
    "executions",
    "route",
]

PROTOCOLS = ["ag-ui", "chat-v6"]


@dataclass(frozen=True)
class Paused:
    """A tool call waiting for approval, as the client saw it."""

    protocol: str
    user: dict[str, Any]
    call_id: str
    tool: str
    arguments: str
    token: str


def route(base: str, protocol: str, agent: str) -> str:
    """The agent's URL for ``protocol``."""
    return f"{base}/agents/{agent}/{'ag-ui' if protocol == 'ag-ui' else 'chat'}"


def events_of(response: httpx.Response) -> list[dict[str, Any]]:
    """The JSON frames of an SSE body (``[DONE]`` left out); fails on any frame that is not JSON."""
    assert response.status_code == 200, response.text
    frames = [line[len("data: ") :] for line in response.text.split("\n") if line.startswith("data: ")]
    return [json.loads(frame) for frame in frames if frame != "[DONE]"]


def _user(protocol: str, text: str) -> dict[str, Any]:
    if protocol == "ag-ui":
        return {"id": "u1", "role": "user", "content": text}
    return {"id": "u1", "role": "user", "parts": [{"type": "text", "text": text}]}


def _body(protocol: str, messages: list[dict[str, Any]], resume: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    if protocol == "ag-ui":
        return {"threadId": "t1", "runId": "r1", "messages": messages, "resume": resume or []}
    return {"id": "chat-1", "messages": messages, "trigger": "submit-message"}


def ask(
    base: str,
    protocol: str,
    agent: str,
    arguments: dict[str, Any],
    headers: dict[str, str] | None = None,
    tool: str = "record",
) -> Paused:
    """Start a run whose model calls ``tool`` with ``arguments``; the run pauses for approval."""
    user = _user(protocol, f"/call {tool} {json.dumps(arguments)}")
    body = _body(protocol, [user])
    events = events_of(httpx.post(route(base, protocol, agent), json=body, headers=headers, timeout=30))
    if protocol == "ag-ui":
        (interrupt,) = events[-1]["outcome"]["interrupts"]
        start = next(e for e in events if e["type"] == "TOOL_CALL_START")
        text = "".join(e["delta"] for e in events if e["type"] == "TOOL_CALL_ARGS")
        return Paused(protocol, user, start["toolCallId"], start["toolCallName"], text, interrupt["id"])
    start = next(e for e in events if e["type"] == "tool-input-start")
    text = "".join(e["inputTextDelta"] for e in events if e["type"] == "tool-input-delta")
    request = next(e for e in events if e["type"] == "tool-approval-request")
    return Paused(protocol, user, start["toolCallId"], start["toolName"], text, request["approvalId"])


def answer_body(paused: Paused, token: str | None = None, *, approved: bool = True) -> dict[str, Any]:
    """The request answering ``paused`` with ``token`` (its own by default)."""
    token = paused.token if token is None else token
    if paused.protocol == "ag-ui":
        call = {
            "id": paused.call_id,
            "type": "function",
            "function": {"name": paused.tool, "arguments": paused.arguments},
        }
        assistant = {"id": "a1", "role": "assistant", "toolCalls": [call]}
        resume = [{"interruptId": token, "status": "resolved" if approved else "cancelled"}]
        return _body(paused.protocol, [paused.user, assistant], resume)
    part = {
        "type": f"tool-{paused.tool}",
        "toolCallId": paused.call_id,
        "state": "approval-responded",
        "input": _parsed(paused.arguments),
        "approval": {"id": token, "approved": approved},
    }
    assistant = {"id": "a1", "role": "assistant", "parts": [{"type": "step-start"}, part]}
    return {**_body(paused.protocol, [paused.user, assistant]), "messageId": "a1"}


def _parsed(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        return text


def answer(
    base: str,
    paused: Paused,
    agent: str,
    token: str | None = None,
    *,
    approved: bool = True,
    headers: dict[str, str] | None = None,
) -> list[dict[str, Any]]:
    """Send the approval (or denial) to ``agent`` and return the answer's events."""
    body = answer_body(paused, token, approved=approved)
    return events_of(httpx.post(route(base, paused.protocol, agent), json=body, headers=headers, timeout=30))


def answer_with_real_client(base: str, paused: Paused, agent: str) -> list[dict[str, Any]]:
    """Send the approval with the real client (``@ag-ui/client``, or ``ai`` 6), which checks every event."""
    body = answer_body(paused)
    url = route(base, paused.protocol, agent)
    if paused.protocol == "ag-ui":
        result = run_node_client("ag_ui_run.mjs", {"url": url, "input": body})
        events: list[dict[str, Any]] = result["events"]
        return events
    chunks: list[dict[str, Any]] = run_node_client("vercel_ai_run.mjs", {"url": url, "version": 6, "body": body})[
        "chunks"
    ]
    return chunks


def tool_outputs(events: list[dict[str, Any]]) -> list[str]:
    """What the client was told each tool call produced, in either protocol."""
    outputs = []
    for event in events:
        if event["type"] == "TOOL_CALL_RESULT":
            outputs.append(event["content"])
        elif event["type"] == "tool-output-available":
            outputs.append(event["output"] if isinstance(event["output"], str) else json.dumps(event["output"]))
        elif event["type"] == "tool-output-error":
            outputs.append(event["errorText"])
    return outputs


def executions(path: Any) -> int:
    """How many times ``record`` ran with this file."""
    try:
        with open(path, encoding="utf-8") as file:
            return len(file.read().splitlines())
    except FileNotFoundError:
        return 0

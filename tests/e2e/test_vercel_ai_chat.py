"""Tool conversations driven by the ``ai`` package's own chat class (v5, v6, v7) against a live server.

tests/clients/vercel_ai_chat.mjs runs an ``AbstractChat`` with ``DefaultChatTransport``; after
``addToolOutput`` or ``addToolApprovalResponse`` the package's ``sendAutomaticallyWhen`` helper makes
the resend, as in a real app. The assertions read the chat's final UIMessages and the bodies it sent.
"""

from collections.abc import Callable
from typing import Any

import pytest

from chatgate.config import Config
from tests.conftest import make_config, run_node_client

Serve = Callable[[Config], str]

ALL_VERSIONS = pytest.mark.parametrize("version", [5, 6, 7], ids=lambda v: f"ai{v}")
APPROVAL_VERSIONS = pytest.mark.parametrize("version", [6, 7], ids=lambda v: f"ai{v}")  # ai 5 has no approvals

CLIENT_TOOLS = {
    "pick_color": {
        "description": "Ask the user to pick a colour.",
        "parameters": {"type": "object", "properties": {"palette": {"type": "string"}}},
    }
}
SERVER_TOOLS = {
    "get_weather": {"function": "tests.sample_tools:get_weather"},
    "add": {"function": "tests.sample_tools:add", "requires_approval": True},
}


def serve_shop(serve: Serve, version: int) -> str:
    agent = {
        "model": "builtin:echo",
        "default": True,
        "vercel_ai_version": f"v{version}",
        "client_tools": CLIENT_TOOLS,
        "tools": SERVER_TOOLS,
    }
    config = make_config({"shop": agent}, server={"approval_secret": "a-secret-of-enough-length"})
    return serve(config) + "/api/chat"


def chat(url: str, version: int, *steps: dict[str, Any], resend_when: str | None = None) -> dict[str, Any]:
    script: dict[str, Any] = {"url": url, "version": version, "steps": list(steps)}
    if resend_when is not None:
        script["sendAutomaticallyWhen"] = resend_when
    result: dict[str, Any] = run_node_client("vercel_ai_chat.mjs", script)
    return result


def send(text: str) -> dict[str, Any]:
    return {"sendMessage": {"text": text}}


def only_assistant(result: dict[str, Any]) -> dict[str, Any]:
    assistants: list[dict[str, Any]] = [message for message in result["messages"] if message["role"] == "assistant"]
    assert len(assistants) == 1, f"expected one assistant message, got {len(assistants)}"
    return assistants[0]


def part_summary(message: dict[str, Any]) -> list[tuple[str, ...]]:
    """Each part as (type, state, what it holds): text, tool output, error text."""
    summary: list[tuple[str, ...]] = []
    for part in message["parts"]:
        if part["type"] == "step-start":
            summary.append(("step-start",))
        elif part["type"] == "text":
            summary.append(("text", part["text"]))
        elif part["state"] == "output-available":
            summary.append((part["type"], part["state"], part["output"]))
        elif part["state"] == "output-error":
            summary.append((part["type"], part["state"], part["errorText"]))
        else:
            summary.append((part["type"], part["state"]))
    return summary


def tool_call_id(message: dict[str, Any]) -> str:
    (call_id,) = [part["toolCallId"] for part in message["parts"] if "toolCallId" in part]
    assert isinstance(call_id, str)
    return call_id


def finish_reason(request: dict[str, Any]) -> str | None:
    finish = request["chunks"][-1]
    assert finish["type"] == "finish"
    reason: str | None = finish.get("finishReason")
    return reason


@ALL_VERSIONS
def test_a_frontend_tool_call_ends_the_turn_and_waits_for_the_client(serve: Serve, version: int) -> None:
    result = chat(serve_shop(serve, version), version, send('/call pick_color {"palette": "warm"}'))
    (request,) = result["requests"]
    assert finish_reason(request) == (None if version == 5 else "tool-calls")
    (tool,) = [part for part in only_assistant(result)["parts"] if part["type"] == "tool-pick_color"]
    assert tool["state"] == "input-available"
    assert tool["input"] == {"palette": "warm"}


@ALL_VERSIONS
def test_a_frontend_tool_output_continues_the_same_assistant_message(serve: Serve, version: int) -> None:
    result = chat(
        serve_shop(serve, version),
        version,
        send('/call pick_color {"palette": "warm"}'),
        {"addToolOutput": {"tool": "pick_color", "output": {"color": "red"}}},
    )
    assistant = only_assistant(result)
    call_id = tool_call_id(assistant)
    assert part_summary(assistant) == [
        ("step-start",),
        ("tool-pick_color", "output-available", {"color": "red"}),
        ("step-start",),
        ("text", f'Tool results: {call_id} returned: {{"color":"red"}}'),
    ]
    first, resend = result["requests"]
    assert resend["body"]["trigger"] == "submit-message"
    assert resend["body"]["messageId"] == assistant["id"]
    assert resend["body"]["messages"][-1]["id"] == assistant["id"]
    assert first["chunks"][0] == {"type": "start", "messageId": assistant["id"]}
    assert resend["chunks"][0] == {"type": "start", "messageId": assistant["id"]}
    assert finish_reason(resend) == (None if version == 5 else "stop")


@ALL_VERSIONS
def test_a_frontend_tool_error_reaches_the_model_as_a_failure(serve: Serve, version: int) -> None:
    result = chat(
        serve_shop(serve, version),
        version,
        send('/call pick_color {"palette": "warm"}'),
        {"addToolOutput": {"tool": "pick_color", "errorText": "the user closed the picker"}},
    )
    assistant = only_assistant(result)
    call_id = tool_call_id(assistant)
    assert part_summary(assistant) == [
        ("step-start",),
        ("tool-pick_color", "output-error", "the user closed the picker"),
        ("step-start",),
        ("text", f"Tool results: {call_id} failed: the user closed the picker"),
    ]
    assert len(result["requests"]) == 2


@ALL_VERSIONS
def test_the_conversation_goes_on_after_a_tool_round_trip(serve: Serve, version: int) -> None:
    result = chat(
        serve_shop(serve, version),
        version,
        send('/call pick_color {"palette": "warm"}'),
        {"addToolOutput": {"tool": "pick_color", "output": "red"}},
        send("Thanks"),
    )
    assert [message["role"] for message in result["messages"]] == ["user", "assistant", "user", "assistant"]
    assert len(result["requests"]) == 3
    last_body = result["requests"][-1]["body"]
    assert [message["role"] for message in last_body["messages"]] == ["user", "assistant", "user"]
    assert "messageId" not in last_body
    assert part_summary(result["messages"][-1]) == [
        ("step-start",),
        ("text", "System prompt: (none)\nLast user message: Thanks"),
    ]


@ALL_VERSIONS
def test_a_server_tool_runs_within_the_same_request(serve: Serve, version: int) -> None:
    result = chat(serve_shop(serve, version), version, send('/call get_weather {"city": "Oslo"}'))
    (request,) = result["requests"]
    assistant = only_assistant(result)
    weather = '{"city":"Oslo","temperature":21,"unit":"c"}'
    assert part_summary(assistant) == [
        ("step-start",),
        ("tool-get_weather", "output-available", {"city": "Oslo", "temperature": 21, "unit": "c"}),
        ("step-start",),
        ("text", f"Tool results: {tool_call_id(assistant)} returned: {weather}"),
    ]
    assert finish_reason(request) == (None if version == 5 else "stop")


@APPROVAL_VERSIONS
def test_a_tool_needing_approval_waits_for_the_human(serve: Serve, version: int) -> None:
    result = chat(serve_shop(serve, version), version, send('/call add {"a": 2, "b": 3}'))
    (request,) = result["requests"]
    assert [chunk["type"] for chunk in request["chunks"][-3:]] == ["tool-approval-request", "finish-step", "finish"]
    assert finish_reason(request) == "tool-calls"
    (tool,) = [part for part in only_assistant(result)["parts"] if part["type"] == "tool-add"]
    assert tool["state"] == "approval-requested"
    assert tool["input"] == {"a": 2, "b": 3}
    assert tool["approval"]["id"].startswith("apr_")


@APPROVAL_VERSIONS
def test_an_approved_tool_runs_and_the_answer_continues_the_message(serve: Serve, version: int) -> None:
    result = chat(
        serve_shop(serve, version),
        version,
        send('/call add {"a": 2, "b": 3}'),
        {"addToolApprovalResponse": {"approved": True}},
        resend_when="lastAssistantMessageIsCompleteWithApprovalResponses",
    )
    assistant = only_assistant(result)
    call_id = tool_call_id(assistant)
    assert part_summary(assistant) == [
        ("step-start",),
        ("tool-add", "output-available", 5),
        ("step-start",),
        ("text", f"Tool results: {call_id} returned: 5"),
    ]
    _, resend = result["requests"]
    assert resend["body"]["messageId"] == assistant["id"]
    (answered,) = [part for part in resend["body"]["messages"][-1]["parts"] if part["type"] == "tool-add"]
    assert (answered["state"], answered["approval"]["approved"]) == ("approval-responded", True)
    assert resend["chunks"][0] == {"type": "start", "messageId": assistant["id"]}


@APPROVAL_VERSIONS
def test_a_denied_tool_never_runs_and_the_model_is_told(serve: Serve, version: int) -> None:
    result = chat(
        serve_shop(serve, version),
        version,
        send('/call add {"a": 2, "b": 3}'),
        {"addToolApprovalResponse": {"approved": False, "reason": "not today"}},
        resend_when="lastAssistantMessageIsCompleteWithApprovalResponses",
    )
    assistant = only_assistant(result)
    call_id = tool_call_id(assistant)
    assert part_summary(assistant) == [
        ("step-start",),
        ("tool-add", "output-denied"),
        ("step-start",),
        ("text", f"Tool results: {call_id} failed: The user denied this tool call. Reason: not today"),
    ]
    _, resend = result["requests"]
    assert [chunk["type"] for chunk in resend["chunks"][:2]] == ["start", "tool-output-denied"]
    assert resend["chunks"][0]["messageId"] == assistant["id"]


def test_ai5_is_told_a_tool_needs_an_approval_it_cannot_give(serve: Serve) -> None:
    result = chat(serve_shop(serve, 5), 5, send('/call add {"a": 2, "b": 3}'))
    assistant = only_assistant(result)
    call_id = tool_call_id(assistant)
    no_approvals = "This tool call needs a human's approval, which this client (AI SDK 5) cannot give."
    # ai 5's lastAssistantMessageIsCompleteWithToolCalls counts the error as an answer and resends once.
    assert part_summary(assistant) == [
        ("step-start",),
        ("tool-add", "output-error", no_approvals),
        ("step-start",),
        ("text", f"Tool results: {call_id} failed: {no_approvals}"),
    ]
    assert len(result["requests"]) == 2


def test_the_request_does_not_say_which_ai_major_sent_it(serve: Serve) -> None:
    """Why ``vercel_ai_version`` must match the app: ai 5, 6 and 7 send the same body."""
    url = serve_shop(serve, 6)

    def shape(version: int) -> Any:
        (request,) = chat(url, version, send("hello"))["requests"]
        body = request["body"]
        return {**body, "id": "ID", "messages": [{**m, "id": "ID"} for m in body["messages"]]}

    assert shape(5) == shape(6) == shape(7)

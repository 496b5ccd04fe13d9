"""Every tool call a client sees ends with an outcome, whatever the model step's finish reason.

A real model server can finish a step with ``length`` after a complete call, or inside a call's
arguments (tests/providers/tool_calls_cut.py has the exact wire bytes). A complete server-tool call runs
and its result streams, and the run ends with the real reason without another model step; a call cut
off is never run and ends as a tool error in the protocol's own terms. Judged by the real clients
(@ag-ui/client, npm ai 5/6/7); the tool's executions are counted in a file it appends to.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from chatgate.run.runner import CUT_OFF
from tests.providers.fakes import fake_in_thread
from tests.providers.test_ui_clients import Serve, ag_ui, serve_on, use_chat
from tests.providers.tool_calls_cut import RECORD_TOOL, anthropic_call, arguments_for, openai_call, runs_of

USER = [{"id": "u1", "role": "user", "content": "Record it."}]
UI_USER = [{"id": "u1", "role": "user", "parts": [{"type": "text", "text": "Record it."}]}]
TOOL_EVENTS = ("TOOL_CALL_START", "TOOL_CALL_END", "TOOL_CALL_RESULT")


def calls(kind: str, arguments: str) -> Any:
    """A call with ``arguments``, then the stop for ``max_tokens`` in the API's own words."""
    if kind == "openai":
        return openai_call(arguments, "length", after=" and so")
    return anthropic_call(arguments, "max_tokens")


def tool_events(result: dict[str, Any]) -> list[tuple[str, str]]:
    return [(e["type"], e.get("content", "")) for e in result["events"] if e["type"] in TOOL_EVENTS]


@pytest.mark.parametrize("kind", ["openai", "anthropic"])
def test_a_complete_server_call_before_length_runs_and_the_run_ends_length(
    serve: Serve, tmp_path: Path, kind: str
) -> None:
    target = tmp_path / "ran.txt"
    with fake_in_thread(calls(kind, arguments_for(target))) as fake:
        result = ag_ui(serve_on(serve, kind, fake.url, tools=RECORD_TOOL), USER)
    assert tool_events(result) == [("TOOL_CALL_START", ""), ("TOOL_CALL_END", ""), ("TOOL_CALL_RESULT", "recorded ran")]
    assert result["events"][-1]["type"] == "RUN_FINISHED"
    assert runs_of(target) == 1
    assert len(fake.requests) == 1  # length does not start another model step


@pytest.mark.parametrize("version", [5, 6, 7])
def test_use_chat_gets_the_output_of_a_call_made_before_length(serve: Serve, tmp_path: Path, version: int) -> None:
    target = tmp_path / "ran.txt"
    with fake_in_thread(calls("openai", arguments_for(target))) as fake:
        url = serve_on(serve, "openai", fake.url, tools=RECORD_TOOL, vercel_ai_version=f"v{version}")
        result = use_chat(url, version, UI_USER)
    (tool,) = [p for p in result["message"]["parts"] if p["type"] == "tool-record"]
    assert (tool["state"], tool["output"]) == ("output-available", "recorded ran")
    finish = {"type": "finish"} if version == 5 else {"type": "finish", "finishReason": "length"}
    last = result["chunks"][-1]
    assert last.pop("messageMetadata")["usage"]["totalTokens"] > 0  # the run's usage, for message.metadata
    assert last == finish
    assert (runs_of(target), len(fake.requests)) == (1, 1)


@pytest.mark.parametrize("kind", ["openai", "anthropic"])
def test_a_call_cut_off_mid_arguments_never_runs_and_ends_as_a_tool_error(
    serve: Serve, tmp_path: Path, kind: str
) -> None:
    target = tmp_path / "ran.txt"
    with fake_in_thread(calls(kind, arguments_for(target)[:25])) as fake:
        url = serve_on(serve, kind, fake.url, tools=RECORD_TOOL)
        agui = ag_ui(url, USER)
        chat = use_chat(url, 6, UI_USER)
    assert tool_events(agui) == [("TOOL_CALL_START", ""), ("TOOL_CALL_END", ""), ("TOOL_CALL_RESULT", CUT_OFF)]
    assert agui["events"][-1]["type"] == "RUN_FINISHED"
    types = [c["type"] for c in chat["chunks"]]
    assert types.count("tool-input-error") == 1 and types.count("tool-output-error") == 1
    assert "tool-input-available" not in types
    (tool,) = [p for p in chat["message"]["parts"] if p["type"] == "tool-record"]
    assert (tool["state"], tool["errorText"]) == ("output-error", CUT_OFF)
    assert (runs_of(target), len(fake.requests)) == (0, 2)


@pytest.mark.parametrize(("arguments", "expected"), [("{}", []), ('{"zo', [("TOOL_CALL_RESULT", CUT_OFF)])])
def test_a_frontend_call_stays_the_clients_unless_cut_off(serve: Serve, arguments: str, expected: list[Any]) -> None:
    tool = {"name": "get_time", "description": "The time now", "parameters": {"type": "object", "properties": {}}}
    with fake_in_thread(openai_call(arguments, "length", name="get_time")) as fake:
        result = ag_ui(serve_on(serve, "openai", fake.url), USER, tools=[tool])
    assert tool_events(result) == [("TOOL_CALL_START", ""), ("TOOL_CALL_END", ""), *expected]
    assert (result["events"][-1]["type"], len(fake.requests)) == ("RUN_FINISHED", 1)


def test_an_approval_gated_call_before_length_waits_for_its_approval(serve: Serve, tmp_path: Path) -> None:
    target = tmp_path / "ran.txt"
    tools = {"record": {"function": "tests.sample_tools:record", "requires_approval": True}}
    with fake_in_thread(calls("openai", arguments_for(target))) as fake:
        url = serve_on(serve, "openai", fake.url, tools=tools)
        result = use_chat(url, 6, UI_USER)
    types = [c["type"] for c in result["chunks"]]
    assert "tool-approval-request" in types and "tool-output-available" not in types
    finish = dict(result["chunks"][-1])
    finish.pop("messageMetadata", None)  # the run's usage (docs/usage.md)
    assert finish == {"type": "finish", "finishReason": "length"}
    assert (runs_of(target), len(fake.requests)) == (0, 1)

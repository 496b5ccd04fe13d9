"""Real tool calls, reasoning and a stored thread from a real model server, in both protocols.

The prompt template llama.cpp renders for the model has a tool-call format llama.cpp parses, and
``tool_choice: required`` has it constrain the small base model to a call (on the ``calling`` server,
which makes the model take the call on any CPU: tests/realmodel/conftest.py); ``enable_thinking`` opens a
``<think>`` block that ``thinking_budget_tokens`` closes, which ``--reasoning-format deepseek`` streams
as reasoning. The server tool counts its runs (tests/realmodel/tools.py).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from chatgate.run.runner import CUT_OFF
from tests.providers.test_ui_clients import Serve, ag_ui, use_chat
from tests.realmodel import tools
from tests.realmodel.conftest import forced_call, llama_config
from tests.realmodel.llama import LlamaServer

pytestmark = pytest.mark.realmodel

WIRES = ["openai", "anthropic"]
WEATHER = {"get_weather": {"function": "tests.realmodel.tools:get_weather"}}
ASK = "What is the weather in Paris?"
USER = [{"id": "u1", "role": "user", "content": ASK}]
UI_USER = [{"id": "u1", "role": "user", "parts": [{"type": "text", "text": ASK}]}]
FRONTEND = {
    "name": "get_time",
    "description": "The time now in a city",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
}


def _types(result: dict[str, Any]) -> list[str]:
    return [event["type"] for event in result["events"]]


def _outcomes(result: dict[str, Any]) -> dict[str, list[str]]:
    """Each call the AG-UI client saw, with the results it got for it."""
    outcomes: dict[str, list[str]] = {}
    for event in result["events"]:
        if event["type"] == "TOOL_CALL_START":
            outcomes[event["toolCallId"]] = []
        elif event["type"] == "TOOL_CALL_RESULT":
            outcomes[event["toolCallId"]].append(event["content"])
    return outcomes


@pytest.mark.parametrize("wire", WIRES)
def test_real_server_tool_calls_run_and_their_results_stream(serve: Serve, calling: LlamaServer, wire: str) -> None:
    tools.RUNS.clear()
    url = serve(llama_config(calling, wire, max_tokens=80, extra=forced_call(wire), tools=WEATHER, max_steps=1))
    outcomes = _outcomes(ag_ui(url, USER))
    assert outcomes and all(len(results) == 1 for results in outcomes.values())  # every call gets one
    ran = [results[0] for results in outcomes.values() if results[0].startswith("Sunny in ")]
    assert ran and len(tools.RUNS) == len(ran)


@pytest.mark.parametrize("wire", WIRES)
def test_max_tokens_after_a_real_call_runs_it_and_ends_the_call_cut_off_as_an_error(
    serve: Serve, calling: LlamaServer, wire: str
) -> None:
    """The issue's case: the model completes a call, starts another, and max_tokens stops it (length)."""
    tools.RUNS.clear()
    url = serve(llama_config(calling, wire, max_tokens=40, extra=forced_call(wire), tools=WEATHER))
    agui = ag_ui(url, USER)
    assert list(_outcomes(agui).values()) == [["Sunny in Paris."], [CUT_OFF]]
    assert _types(agui)[-1] == "RUN_FINISHED"
    chat = use_chat(url, 6, UI_USER)
    parts = [p for p in chat["message"]["parts"] if p["type"] == "tool-get_weather"]
    assert [(p["state"], p.get("output", p.get("errorText"))) for p in parts] == [
        ("output-available", "Sunny in Paris."),
        ("output-error", CUT_OFF),
    ]
    finish = dict(chat["chunks"][-1])
    finish.pop("messageMetadata", None)  # the run's usage (docs/usage.md)
    assert finish == {"type": "finish", "finishReason": "length"}
    assert tools.RUNS == ["Paris", "Paris"]  # once per run: the complete call only


@pytest.mark.parametrize("wire", WIRES)
def test_a_real_frontend_call_is_left_to_the_client(serve: Serve, calling: LlamaServer, wire: str) -> None:
    result = ag_ui(serve(llama_config(calling, wire, max_tokens=64, extra=forced_call(wire))), USER, tools=[FRONTEND])
    types = _types(result)
    assert "TOOL_CALL_START" in types and "TOOL_CALL_END" in types and "TOOL_CALL_RESULT" not in types
    assert types[-1] == "RUN_FINISHED"


@pytest.mark.parametrize("version", [6, 7])
def test_a_real_approval_gated_call_waits_for_its_approval(serve: Serve, calling: LlamaServer, version: int) -> None:
    tools.RUNS.clear()
    gated = {"get_weather": {**WEATHER["get_weather"], "requires_approval": True}}
    config = llama_config(
        calling, "openai", max_tokens=64, extra=forced_call("openai"), tools=gated, vercel_ai_version=f"v{version}"
    )
    result = use_chat(serve(config), version, UI_USER)
    types = [c["type"] for c in result["chunks"]]
    assert "tool-approval-request" in types and "tool-output-available" not in types
    assert tools.RUNS == []


@pytest.mark.parametrize("wire", WIRES)
def test_a_stored_thread_takes_several_turns(serve: Serve, llama: LlamaServer, wire: str, tmp_path: Path) -> None:
    store = {"url": f"sqlite:///{tmp_path / 'threads.db'}"}
    url = serve(llama_config(llama, wire, max_tokens=4, store=store, conversations="server", system_prompt="Be brief."))
    messages: list[dict[str, Any]] = []
    for turn, text in enumerate(["First: apples.", "Second: pears.", "Third: plums."]):
        before = len(llama.prompts())
        result = ag_ui(url, [*messages, {"id": f"u{turn}", "role": "user", "content": text}], threadId="t1")
        assert _types(result)[-1] == "RUN_FINISHED"
        messages = result["messages"]
        (prompt,) = llama.prompts()[before:]
        assert "First: apples." in prompt and text in prompt
    assert [m["role"] for m in messages] == ["user", "assistant"] * 3

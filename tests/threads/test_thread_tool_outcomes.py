"""A stored thread never keeps an unanswered server-tool call, so its next turn works on either wire kind.

The first turn's model step makes a call of ``record`` and stops for ``max_tokens`` (after the call, or
inside its arguments: tests/providers/tool_calls_cut.py). The thread stores the call with its outcome,
and the second turn sends the upstream the call and its result in the API's own form (arguments that
are valid JSON, as both APIs require), on SQLite and PostgreSQL.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
import pytest

from chatgate.run.runner import CUT_OFF
from tests.conftest import make_config, run_node_client
from tests.providers.fakes import fake_in_thread, text_reply
from tests.providers.support import provider_table
from tests.providers.test_ui_clients import Serve
from tests.providers.tool_calls_cut import RECORD_TOOL, anthropic_call, arguments_for, openai_call, runs_of


def _turn(url: str, messages: list[dict[str, Any]]) -> Any:
    script = {"url": f"{url}/agents/bot/ag-ui", "input": {"threadId": "t1", "messages": messages}}
    return run_node_client("ag_ui_run.mjs", script)


def _sent_back(kind: str, body: dict[str, Any], arguments: str, result: str, cut: bool) -> None:
    """The second upstream request carries the call, then its result, in the API's own form."""
    if kind == "openai":
        call = {"id": "call_1", "type": "function", "function": {"name": "record", "arguments": arguments}}
        assert body["messages"][1:3] == [
            {"role": "assistant", "content": None, "tool_calls": [call]},
            {"role": "tool", "tool_call_id": "call_1", "content": result},
        ]
        return
    tool_result: dict[str, Any] = {"type": "tool_result", "tool_use_id": "toolu_1", "content": result}
    if cut:
        tool_result["is_error"] = True
    use = {"type": "tool_use", "id": "toolu_1", "name": "record", "input": json.loads(arguments)}
    assert body["messages"][1:3] == [
        {"role": "assistant", "content": [use]},
        {"role": "user", "content": [tool_result, {"type": "text", "text": "Again?"}]},  # one user turn
    ]


@pytest.mark.parametrize("cut", [False, True], ids=["complete", "cut-off"])
@pytest.mark.parametrize("kind", ["openai", "anthropic"])
def test_the_next_turn_after_a_call_and_max_tokens_works(
    serve: Serve, store_url: str, tmp_path: Path, kind: str, cut: bool
) -> None:
    target = tmp_path / "ran.txt"
    whole = arguments_for(target)
    arguments = whole[:25] if cut else whole
    first = openai_call(arguments, "length") if kind == "openai" else anthropic_call(arguments, "max_tokens")
    with fake_in_thread(first, text_reply(kind, "Done.")) as fake:
        agent = {"model": "up:m", "conversations": "server", "tools": RECORD_TOOL}
        providers = {"up": provider_table(kind, fake.url)}
        url = serve(make_config({"bot": agent}, providers=providers, store={"url": store_url}))
        one = _turn(url, [{"id": "u1", "role": "user", "content": "Record it."}])
        stored = httpx.get(f"{url}/agents/bot/threads/t1/messages").json()["messages"]
        two = _turn(url, [*one["messages"], {"id": "u2", "role": "user", "content": "Again?"}])
    result = CUT_OFF if cut else "recorded ran"
    (tool,) = [p for p in stored[1]["parts"] if p["type"] == "tool-record"]
    assert tool["state"] == ("output-error" if cut else "output-available")
    assert tool.get("errorText", tool.get("output")) == result
    assert two["events"][-1]["type"] == "RUN_FINISHED" and two["messages"][-1]["content"] == "Done."
    _sent_back(kind, fake.bodies[1], "{}" if cut else whole, result, cut)
    assert (len(fake.requests), runs_of(target)) == (2, 0 if cut else 1)

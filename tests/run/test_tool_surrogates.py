"""A lone surrogate in a server tool's result reaches model, client and store escaped, never as a crash.

UTF-8 cannot encode a lone surrogate (Python text read with ``surrogateescape`` holds them). Before,
encoding the tool's result failed: AG-UI ended ``RUN_ERROR internal_error`` and useChat ``error``, with
a traceback in the log. Now it is written ``\\udcff`` (six characters), as traces and approval tokens
write it, and the run goes on: the fake upstream (real HTTP) receives the escaped result.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from chatgate.config import Config
from tests.conftest import make_config
from tests.e2e.approval_flows import events_of
from tests.providers.fakes import FakeUpstream, Reply, fake_in_thread, openai_chunk, text_reply
from tests.providers.support import provider_table

Serve = Callable[[Config], str]
TOOLS = {name: {"function": f"tests.sample_tools:{name}"} for name in ("lone_surrogate", "lone_surrogate_data")}
ESCAPED = {"lone_surrogate": "x\\udcff y", "lone_surrogate_data": {"name": "x\\udcff", "k\\ud800": [1, "y\\udfff"]}}


def _calls(tool: str) -> Reply:
    call = {"index": 0, "id": "call_1", "type": "function", "function": {"name": tool, "arguments": "{}"}}
    return Reply([openai_chunk({"tool_calls": [call]}), openai_chunk({}, "tool_calls"), b"data: [DONE]\n\n"])


@pytest.fixture(params=["lone_surrogate", "lone_surrogate_data"])
def tool(request: pytest.FixtureRequest) -> str:
    name: str = request.param
    return name


@pytest.fixture
def upstream(tool: str) -> Iterator[FakeUpstream]:
    with fake_in_thread(_calls(tool), text_reply("openai", "done")) as fake:
        yield fake


def _body(protocol: str) -> dict[str, Any]:
    if protocol == "ag-ui":
        return {"threadId": "t1", "runId": "r1", "messages": [{"id": "u1", "role": "user", "content": "go"}]}
    return {"id": "t1", "messages": [{"id": "u1", "role": "user", "parts": [{"type": "text", "text": "go"}]}]}


@pytest.mark.parametrize("protocol", ["ag-ui", "chat"])
@pytest.mark.parametrize("conversations", ["client", "server"])
def test_a_lone_surrogate_in_a_tool_result_is_escaped_for_model_client_and_store(
    serve: Serve, upstream: FakeUpstream, tool: str, protocol: str, conversations: str, tmp_path: Path
) -> None:
    agent = {"model": "up:m", "tools": TOOLS, "conversations": conversations}
    base = serve(
        make_config(
            {"bot": agent},
            providers={"up": provider_table("openai", upstream.url)},
            store={"url": f"sqlite:///{tmp_path / 'threads.db'}"},
        )
    )
    events = events_of(httpx.post(f"{base}/agents/bot/{protocol}", json=_body(protocol), timeout=30))
    expected = ESCAPED[tool]
    text = expected if isinstance(expected, str) else json.dumps(expected, separators=(",", ":"))
    if protocol == "ag-ui":
        assert events[-1]["type"] == "RUN_FINISHED", events[-2:]
        assert [e["content"] for e in events if e["type"] == "TOOL_CALL_RESULT"] == [text]
    else:
        assert events[-1]["type"] == "finish" and events[-1]["finishReason"] == "stop", events[-2:]
        assert [e["output"] for e in events if e["type"] == "tool-output-available"] == [expected]
    assert len(upstream.requests) == 2  # the model was called again, with the escaped result
    (tool_message,) = [m for m in upstream.bodies[1]["messages"] if m["role"] == "tool"]
    assert tool_message["content"] == text
    if conversations == "server":
        stored = httpx.get(f"{base}/agents/bot/threads/t1/messages", timeout=10).json()["messages"]
        outputs = [part["output"] for part in stored[1]["parts"] if part["type"] == f"tool-{tool}"]
        assert outputs == [expected]  # stored and read back, escaped

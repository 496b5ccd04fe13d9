"""A run never silently goes without an agent's MCP tools while their server connects (issue 38).

The server is the real ``mcp-server-time`` behind a gate: a shell that waits for a file before it
becomes the server, so the test decides when the server is up: after chatgate started, or after the
session was lost. The model is a fake OpenAI-compatible upstream that records every request, so the
tests count what the model was told (the tools offered) and whether it was called at all.
"""

from __future__ import annotations

import json
import os
import signal
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from starlette.applications import Starlette

from chatgate.config import Config
from chatgate.web.app import create_app
from tests.conftest import LiveServer, make_config
from tests.e2e.approval_flows import PROTOCOLS, route
from tests.mcp.real_servers import child_pids, time_stdio
from tests.providers.fakes import FakeUpstream, fake_in_thread, text_reply
from tests.providers.support import provider_table

TIME_TOOLS = ["time__convert_time", "time__get_current_time"]
GENEROUS = 120.0  # a bound on waits, sized for a loaded machine (the server starts in about a second)


@pytest.fixture
def upstream() -> Iterator[FakeUpstream]:
    with fake_in_thread(text_reply("openai", "done")) as fake:
        yield fake


@pytest.fixture
def gate(tmp_path: Path) -> Path:
    """The file whose existence lets the time server start."""
    return tmp_path / "gate"


def gated_time_server(gate: Path, **table: Any) -> dict[str, Any]:
    """``[mcp_servers.time]``: the real time server, started only once ``gate`` exists."""
    wait = 'while [ ! -e "$0" ]; do sleep 0.05; done; exec "$@"'
    return {"command": ["/bin/sh", "-c", wait, str(gate), *time_stdio()], **table}


def config(upstream: FakeUpstream, server: dict[str, Any]) -> Config:
    agent = {"model": "up:m", "mcp": {"time": {}}}
    return make_config(
        {"ops": agent}, providers={"up": provider_table("openai", upstream.url)}, mcp_servers={"time": server}
    )


@pytest.fixture
def chatgate() -> Iterator[list[LiveServer]]:
    servers: list[LiveServer] = []
    yield servers
    for server in servers:
        server.stop()


def start(servers: list[LiveServer], config: Config) -> tuple[str, Starlette]:
    """chatgate serving at once, its MCP server still connecting in the background: its URL and app."""
    app = create_app(config)
    server = LiveServer(app)
    server.start()
    servers.append(server)
    return server.url, app


def body(protocol: str) -> dict[str, Any]:
    if protocol == "ag-ui":
        return {"threadId": "t1", "runId": "r1", "messages": [{"id": "u1", "role": "user", "content": "time?"}]}
    user = {"id": "u1", "role": "user", "parts": [{"type": "text", "text": "time?"}]}
    return {"id": "chat-1", "messages": [user], "trigger": "submit-message"}


def run(base: str, protocol: str, *, once_started: Path | None = None) -> list[dict[str, Any]]:
    """One turn's frames; with ``once_started``, that file is created when the run's first frame arrives."""
    frames: list[dict[str, Any]] = []
    with httpx.stream("POST", route(base, protocol, "ops"), json=body(protocol), timeout=GENEROUS * 2) as response:
        assert response.status_code == 200, response.read()
        for line in response.iter_lines():
            if line.startswith("data: ") and line != "data: [DONE]":
                frames.append(json.loads(line[len("data: ") :]))
                if once_started is not None and len(frames) == 1:
                    once_started.touch()  # the run has started, and the server only now begins to start
    return frames


def offered(upstream: FakeUpstream) -> list[list[str]]:
    """The tool names each model call was offered."""
    return [sorted(tool["function"]["name"] for tool in r.body.get("tools", [])) for r in upstream.requests]


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_a_run_right_after_start_waits_for_its_server_and_offers_its_tools(
    chatgate: list[LiveServer], upstream: FakeUpstream, gate: Path, protocol: str
) -> None:
    base, _ = start(chatgate, config(upstream, gated_time_server(gate, connect_wait_seconds=GENEROUS)))
    assert httpx.get(f"{base}/readyz").status_code == 503  # the server is not up yet
    frames = run(base, protocol, once_started=gate)
    assert frames[-1]["type"] in ("RUN_FINISHED", "finish"), frames
    assert offered(upstream) == [TIME_TOOLS]  # one model call, told of the server's tools


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_a_server_still_down_after_the_wait_ends_the_run_before_the_model_is_called(
    chatgate: list[LiveServer], upstream: FakeUpstream, gate: Path, protocol: str
) -> None:
    base, _ = start(chatgate, config(upstream, gated_time_server(gate, connect_wait_seconds=0.2)))
    frames = run(base, protocol)
    message = "The tools of the MCP server 'time' are not available now; try again shortly."
    if protocol == "ag-ui":
        last = frames[-1]
        assert (last["type"], last["code"], last["message"]) == ("RUN_ERROR", "mcp_unavailable", message)
    else:
        assert [f["errorText"] for f in frames if f["type"] == "error"] == [message]
        assert frames[-1]["type"] == "finish" and frames[-1]["finishReason"] == "error"
    assert upstream.requests == []  # the model was never called, so never told the tools do not exist


def test_an_optional_server_that_is_down_is_left_out_and_the_run_goes_on(
    chatgate: list[LiveServer], upstream: FakeUpstream, gate: Path
) -> None:
    base, _ = start(chatgate, config(upstream, gated_time_server(gate, connect_wait_seconds=0.2, optional=True)))
    frames = run(base, "ag-ui")
    assert frames[-1]["type"] == "RUN_FINISHED"
    assert offered(upstream) == [[]]


def test_a_run_after_the_server_was_lost_waits_for_it_to_reconnect(
    chatgate: list[LiveServer], upstream: FakeUpstream, gate: Path
) -> None:
    gate.touch()
    base, app = start(chatgate, config(upstream, gated_time_server(gate, connect_wait_seconds=GENEROUS)))
    connection = app.services.running.mcp.connections["time"]
    _until(lambda: connection.connected, "the time server never connected")
    gate.unlink()  # the restarted server will wait until the run has started
    (first,) = child_pids("mcp-server-time")
    os.kill(first, signal.SIGKILL)
    _until(lambda: not connection.connected, "the lost session was never noticed")
    frames = run(base, "ag-ui", once_started=gate)
    assert frames[-1]["type"] == "RUN_FINISHED", frames
    assert offered(upstream) == [TIME_TOOLS]
    assert connection.restarts >= 1 and child_pids("mcp-server-time") != [first]


def _until(condition: Any, failure: str) -> None:
    for _ in range(int(GENEROUS / 0.05)):
        if condition():
            return
        time.sleep(0.05)
    pytest.fail(failure)

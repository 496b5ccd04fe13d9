"""An approval-required MCP tool on a stored thread (SQLite and PostgreSQL) runs once on the real server,
whatever is replayed or raced: counted by the stdio tap in front of it."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.e2e.approval_flows import PROTOCOLS, answer_body, ask, route
from tests.e2e.test_mcp_tools import Serve, config, serve
from tests.mcp.real_servers import calls_on_server, counted, everything_stdio

__all__ = ["serve"]  # the fixture that waits for the MCP server


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_a_stored_threads_mcp_approval_runs_once(serve: Serve, store_url: str, tmp_path: Path, protocol: str) -> None:
    log = tmp_path / "calls.jsonl"
    servers = {"everything": {"command": counted(everything_stdio(), log)}}
    agent: dict[str, Any] = {"conversations": "server"}
    stored = config(servers, {"everything": {"requires_approval": ["echo"]}}, **agent)
    base, _ = serve(stored.model_copy(update={"store": stored.store.model_copy(update={"url": store_url})}))
    paused = ask(base, protocol, "ops", {"message": "stored"}, tool="everything__echo")
    assert calls_on_server(log) == []

    statuses: list[int] = []
    body = answer_body(paused)

    def race() -> None:
        statuses.append(httpx.post(route(base, protocol, "ops"), json=body, timeout=60).status_code)

    threads = [threading.Thread(target=race) for _ in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(statuses) == 6 and 200 in statuses
    replay = httpx.post(route(base, protocol, "ops"), json=body, timeout=60)  # adds nothing to the thread
    assert replay.status_code in (200, 422), replay.text
    assert [call["arguments"] for call in calls_on_server(log)] == [{"message": "stored"}]
    thread = "t1" if protocol == "ag-ui" else "chat-1"
    messages = httpx.get(f"{base}/agents/ops/threads/{thread}/messages").json()["messages"]
    assert sum("Echo: stored" in str(message) for message in messages) == 1

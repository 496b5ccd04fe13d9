"""An approval-required MCP tool on a stored thread (SQLite and PostgreSQL) runs once on the real server,
whatever is replayed or raced: counted by the stdio tap in front of it."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import httpx

from tests.e2e.approval_flows import answer, answer_body, ask, route, tool_outputs
from tests.e2e.test_mcp_tools import Serve, config, serve
from tests.mcp.real_servers import calls_on_server, counted, everything_stdio

__all__ = ["serve"]  # the fixture that waits for the MCP server


def test_a_stored_threads_mcp_approval_runs_once(serve: Serve, store_url: str, tmp_path: Path) -> None:
    log = tmp_path / "calls.jsonl"
    servers = {"everything": {"command": counted(everything_stdio(), log)}}
    agent: dict[str, Any] = {"conversations": "server"}
    stored = config(servers, {"everything": {"requires_approval": ["echo"]}}, **agent)
    base, _ = serve(stored.model_copy(update={"store": stored.store.model_copy(update={"url": store_url})}))
    paused = ask(base, "ag-ui", "ops", {"message": "stored"}, tool="everything__echo")
    assert calls_on_server(log) == []

    statuses: list[int] = []
    body = answer_body(paused)

    def race() -> None:
        statuses.append(httpx.post(route(base, "ag-ui", "ops"), json=body, timeout=60).status_code)

    threads = [threading.Thread(target=race) for _ in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(statuses) == 6
    assert tool_outputs(answer(base, paused, "ops")) == []  # a replay adds nothing to the stored thread
    assert [call["arguments"] for call in calls_on_server(log)] == [{"message": "stored"}]
    messages = httpx.get(f"{base}/agents/ops/threads/t1/messages").json()["messages"]
    assert sum("Echo: stored" in str(message) for message in messages) == 1

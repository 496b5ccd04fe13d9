"""A stored thread's approval belongs to its owner's thread: another key's, on SQLite and PostgreSQL, runs nothing."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import httpx

from chatgate.config import Config
from tests.e2e.approval_flows import answer, ask, executions, tool_outputs
from tests.e2e.test_approvals_scoped import ALICE, BOB, config, log, upstream
from tests.providers.fakes import FakeUpstream

Serve = Callable[[Config], str]
__all__ = ["log", "upstream"]  # the fixtures, shared with the stateless tests


def test_another_owners_approval_runs_nothing_on_a_stored_thread(
    serve: Serve, upstream: FakeUpstream, log: Path, store_url: str
) -> None:
    base = serve(config(upstream, keys=True, agent={"conversations": "server"}, store={"url": store_url}))
    alices = ask(base, "ag-ui", "ops", {}, headers=ALICE)  # both on thread "t1": each owner's own thread
    bobs = ask(base, "ag-ui", "ops", {}, headers=BOB)
    assert (alices.call_id, alices.arguments) == (bobs.call_id, bobs.arguments)
    assert tool_outputs(answer(base, alices, "ops", headers=ALICE)) == ["recorded ran"]
    assert executions(log) == 1
    assert tool_outputs(answer(base, bobs, "ops", alices.token, headers=BOB)) == []  # refused
    assert executions(log) == 1
    stored = httpx.get(f"{base}/agents/ops/threads/t1/messages", headers=BOB).json()["messages"]
    assert "recorded ran" not in json.dumps(stored)  # Alice's recorded result never reached Bob's thread

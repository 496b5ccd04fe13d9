"""Approvals belong to one call, one key and one thread, even when the model reuses a tool call id.

A fake OpenAI-compatible upstream (real HTTP on loopback) answers every first turn with the same tool
call, id ``call_same``, to ``record`` with the same arguments, as some servers do. Tool executions are
counted in the file ``record`` appends to.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from chatgate.approvals import ApprovalSigner
from chatgate.config import Config
from tests.conftest import make_config
from tests.e2e.approval_flows import PROTOCOLS, answer, ask, executions, tool_outputs
from tests.providers.fakes import FakeUpstream, Reply, fake_in_thread, openai_chunk, text_reply
from tests.providers.support import provider_table

Serve = Callable[[Config], str]
RECORD = {"record": {"function": "tests.sample_tools:record", "requires_approval": True}}
KEYS = [{"id": "alice", "key": "sk-alice-0123456789"}, {"id": "bob", "key": "sk-bob-0123456789"}]
ALICE = {"authorization": "Bearer sk-alice-0123456789"}
BOB = {"authorization": "Bearer sk-bob-0123456789"}


def same_call(log: Path) -> Reply:
    """A turn that calls ``record`` as ``call_same``, whoever asks."""
    call = {"id": "call_same", "type": "function", "function": {"name": "record", "arguments": ""}}
    arguments = json.dumps({"path": str(log)})
    return Reply(
        [
            openai_chunk({"tool_calls": [{"index": 0, **call}]}),
            openai_chunk({"tool_calls": [{"index": 0, "function": {"arguments": arguments}}]}),
            openai_chunk({}, "tool_calls"),
            b"data: [DONE]\n\n",
        ]
    )


@pytest.fixture
def log(tmp_path: Path) -> Path:
    return tmp_path / "runs.log"


@pytest.fixture
def upstream(log: Path) -> Iterator[FakeUpstream]:
    # Two first turns that call the tool, then plain answers (the last reply repeats).
    with fake_in_thread(same_call(log), same_call(log), text_reply("openai", "done")) as fake:
        yield fake


def config(upstream: FakeUpstream, *, keys: bool = False, **top: Any) -> Config:
    agent = {"model": "up:m", "tools": RECORD, **top.pop("agent", {})}
    extra: dict[str, Any] = {"keys": KEYS} if keys else {}
    return make_config(
        {"ops": agent, "other": agent},
        providers={"up": provider_table("openai", upstream.url)},
        server={"approval_secret": "a-secret-of-enough-length", **top.pop("server", {})},
        **extra,
        **top,
    )


@pytest.fixture(params=PROTOCOLS)
def protocol(request: pytest.FixtureRequest) -> str:
    value: str = request.param
    return value


def test_two_identical_calls_in_one_second_are_answered_apart(
    serve: Serve, upstream: FakeUpstream, log: Path, protocol: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    now = time.time()  # the server's signing clock stands still: both calls are issued in this second
    monkeypatch.setattr(
        "chatgate.approvals.setup.ApprovalSigner", lambda secret: ApprovalSigner(secret, clock=lambda: now)
    )
    base = serve(config(upstream))
    first, second = (ask(base, protocol, "ops", {}) for _ in range(2))  # two conversations, one stateless agent
    assert (first.call_id, first.arguments) == (second.call_id, second.arguments)
    assert first.token.split("_")[1] == second.token.split("_")[1]  # the same issue second
    assert first.token != second.token
    assert tool_outputs(answer(base, first, "ops")) == ["recorded ran"]
    assert executions(log) == 1
    denied = answer(base, second, "ops", approved=False)
    assert "recorded ran" not in json.dumps(denied)  # its own denial, not the first one's result
    assert executions(log) == 1  # the denial ran nothing, and did not take the first one's outcome
    assert tool_outputs(answer(base, first, "ops")) == ["recorded ran"]  # a replay: its own first outcome
    assert "recorded ran" not in json.dumps(answer(base, second, "ops"))  # the denial stands
    assert executions(log) == 1


@pytest.mark.parametrize("ledger", ["memory", "redis"])
def test_another_keys_approval_runs_nothing(
    serve: Serve, upstream: FakeUpstream, log: Path, protocol: str, ledger: str, request: pytest.FixtureRequest
) -> None:
    server = {"redis_url": request.getfixturevalue("redis_url")} if ledger == "redis" else {}
    base = serve(config(upstream, keys=True, server=server))
    alices = ask(base, protocol, "ops", {}, headers=ALICE)
    bobs = ask(base, protocol, "ops", {}, headers=BOB)
    assert (alices.call_id, alices.arguments) == (bobs.call_id, bobs.arguments)
    assert tool_outputs(answer(base, bobs, "ops", alices.token, headers=BOB)) == []  # refused: not his
    assert executions(log) == 0
    assert tool_outputs(answer(base, alices, "ops", headers=ALICE)) == ["recorded ran"]
    assert executions(log) == 1
    assert tool_outputs(answer(base, bobs, "ops", alices.token, headers=BOB)) == []  # not Alice's outcome either
    assert tool_outputs(answer(base, alices, "other", headers=ALICE)) == []  # nor on another agent
    assert executions(log) == 1
    assert tool_outputs(answer(base, bobs, "ops", headers=BOB)) == ["recorded ran"]  # his own runs his tool
    assert executions(log) == 2

"""How the runner answers an approval through the ledger: claim, run, record; never a second run."""

import asyncio
import logging
from contextlib import aclosing

import pytest
import redis.asyncio as redis

from chatgate.approvals.ledger import ApprovalLedgerError, ApprovalOutcome, Claim, Claimed, MemoryApprovalLedger
from chatgate.approvals.setup import app_approvals
from chatgate.events import RunFailed, ToolResult
from chatgate.run.runner import ALREADY_ANSWERING, APPROVALS_UNAVAILABLE, run_agent
from chatgate.run.tools import ServerTool
from chatgate.run_input import ApprovalResponse
from tests.conftest import make_config
from tests.run.test_runner_tools import BOT, SIGNER, ScriptedModel, after_approval_request, agent, says


class Gate:
    """Holds ``slow_delete`` until the test releases it; made per test, on that test's loop."""

    started: asyncio.Event
    release: asyncio.Event


GATE = Gate()
RUNS: list[str] = []


async def slow_delete(path: str) -> str:
    """Waits until the test releases it."""
    RUNS.append(path)
    GATE.started.set()
    await GATE.release.wait()
    return "deleted"


SLOW = ServerTool.from_function("delete", slow_delete, requires_approval=True)


class DownLedger:
    async def claim(self, approval_id: str, *, scope: str) -> Claim:
        raise ApprovalLedgerError("redis: connection refused")

    async def record(self, claim: Claimed, outcome: ApprovalOutcome) -> None:
        raise AssertionError("nothing was claimed")


TOKEN: list[str] = []  # this test's one approval token: each issued token is unique


def approved() -> object:
    return after_approval_request(ApprovalResponse(TOKEN[0], True))


async def run_once(ledger: object) -> list[object]:
    bot = agent(ScriptedModel(says("done")), server_tools={"delete": SLOW}, approval_ledger=ledger)
    return [event async for event in run_agent(bot, approved())]  # type: ignore[arg-type]


@pytest.fixture(autouse=True)
async def fresh() -> None:
    GATE.started, GATE.release = asyncio.Event(), asyncio.Event()
    RUNS.clear()
    TOKEN[:] = [SIGNER.token("bot", "c1", "delete", '{"path": "/tmp/x"}', scope=BOT)]


async def test_an_unreachable_ledger_ends_the_run_and_runs_nothing() -> None:
    events = await run_once(DownLedger())
    assert events == [RunFailed(APPROVALS_UNAVAILABLE, code="run_error")]
    assert RUNS == []


async def test_a_replay_while_the_tool_runs_is_told_so_and_does_not_run_it() -> None:
    ledger = MemoryApprovalLedger()
    first = asyncio.create_task(run_once(ledger))
    await GATE.started.wait()
    replay = await run_once(ledger)
    assert replay[0] == ToolResult("c1", ALREADY_ANSWERING, is_error=True)
    GATE.release.set()
    assert (await first)[0] == ToolResult("c1", "deleted")
    assert RUNS == ["/tmp/x"]


async def test_a_client_hanging_up_mid_tool_still_records_the_outcome() -> None:
    ledger = MemoryApprovalLedger()
    bot = agent(ScriptedModel(says("done")), server_tools={"delete": SLOW}, approval_ledger=ledger)

    async def consume() -> None:
        async with aclosing(run_agent(bot, approved())) as events:  # type: ignore[arg-type]
            async for _ in events:
                pass

    hung_up = asyncio.create_task(consume())
    await GATE.started.wait()
    hung_up.cancel()
    with pytest.raises(asyncio.CancelledError):
        await hung_up
    GATE.release.set()
    await asyncio.sleep(0.01)
    assert (await run_once(ledger))[0] == ToolResult("c1", "deleted")
    assert RUNS == ["/tmp/x"]


def test_without_redis_a_config_with_approvals_warns_at_start_and_on_reload(caplog: pytest.LogCaptureFixture) -> None:
    tools = {"t": {"function": "tests.sample_tools:record", "requires_approval": True}}
    approvals = app_approvals(None)
    with caplog.at_level(logging.WARNING, logger="chatgate.approvals"):
        approvals.warn_if_unshared(make_config({"plain": {"model": "builtin:echo"}}))
        assert caplog.text == ""
        shared = app_approvals(redis.Redis.from_url("redis://127.0.0.1:1/0"))  # never connects here
        shared.warn_if_unshared(make_config({"ops": {"model": "builtin:echo", "tools": tools}}))
        assert caplog.text == ""
        approvals.warn_if_unshared(make_config({"ops": {"model": "builtin:echo", "tools": tools}}))
    assert "APPROVALS ARE SINGLE-USE ONLY WITHIN THIS PROCESS" in caplog.text

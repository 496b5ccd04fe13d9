"""The ``thread`` stage: a request on an agent with ``conversations = "server"`` meets its stored thread.

Between decode and run: load the caller's thread, reconcile what the client sent (app/threads/plan.py),
take the thread for this run and commit the user's turn in one transaction (409 ``thread_busy`` when
another run holds it), then start the run detached from the request (app/threads/run.py), writing its
stream to the run log the request then follows. The model gets the stored history under the thread's
system message, rendered per request and never stored, and (``strategy = "summarize"``) the thread's
stored summary of the turns that no longer fit.

A request that adds nothing (a replay: a retry, a reconnect, a duplicate sent at the same moment) never
starts a run. On a thread whose run is still going it follows that run from its start (docs/resume.md);
otherwise AG-UI gets a hydrate and useChat 422 ``nothing_to_answer``. Of any number of requests adding
the same thing at once, the store's conditional take lets exactly one start its run; the others read the
thread again, find what they add already stored (or the call it answers already being answered by the
run holding the thread) and follow that run. The run's log is opened before the take, so whoever sees
the run in the store can follow it.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncGenerator, AsyncIterator
from dataclasses import dataclass, replace
from functools import partial

from chatgate.caller import Caller
from chatgate.config import Config
from chatgate.context import SummaryKeeper
from chatgate.errors import RequestError
from chatgate.events import RunEvent, RunFinished
from chatgate.history import ToolCallPart
from chatgate.ids import MAX_ID_LENGTH, new_id
from chatgate.protocol import UIProtocol, retracts_steps
from chatgate.run import Agent, run_agent
from chatgate.run_input import ApprovalResponse, RunInput
from chatgate.runlog import RunLog, RunWriter
from chatgate.store import StoredMessage, SystemState, ThreadBusy, ThreadInfo, ThreadStore
from chatgate.telemetry import Metrics
from chatgate.threads.follow import replay_run, run_log_id
from chatgate.threads.inputs import turn_inputs
from chatgate.threads.plan import nothing_to_answer, plan_turn
from chatgate.threads.recovery import RunRecovery
from chatgate.threads.run import ThreadRun, TurnRecorder
from chatgate.threads.titles import ThreadTitler
from chatgate.tracing import RunTrace
from chatgate.usage import RunAccount

__all__ = ["MAX_THREAD_ID", "ThreadServices", "ThreadTurn", "open_thread_turn"]

logger = logging.getLogger("chatgate.thread_stage")

_ATTEMPTS = 3
MAX_THREAD_ID = MAX_ID_LENGTH
"""The longest thread id a stored conversation accepts."""


@dataclass(frozen=True, slots=True)
class ThreadServices:
    """What every stored-thread turn of an app shares, built once when the app starts."""

    store: ThreadStore
    run_log: RunLog
    """Where detached runs write their frames (app/runlog/)."""
    stopping: asyncio.Event
    """Set when the server shuts down: running turns end in protocol."""
    runs: set[ThreadRun]
    """The runs going on in this process, checkpointed together and closed at shutdown."""
    metrics: Metrics | None = None
    recovery: RunRecovery | None = None
    """Saves the turn of a run whose producer died (a Redis run log keeps its journal)."""


@dataclass(frozen=True, slots=True)
class RunCursor:
    """How far a reconnecting client read a run: its id for the run, and how many of its events it has."""

    run_id: str
    events: int


@dataclass(frozen=True, slots=True)
class ThreadTurn:
    """What the server streams: the protocol's frames for this request, and the run they follow, if any.

    The run goes on when its request's client hangs up (``finish_on_disconnect``): whoever limits
    concurrent streams holds the caller's slot until ``run`` ends, not just the stream.
    """

    frames: AsyncGenerator[bytes, None]
    run: asyncio.Task[None] | None = None


async def open_thread_turn(
    services: ThreadServices | None,
    agent: Agent,
    caller: Caller,
    run_input: RunInput,
    *,
    protocol: UIProtocol,
    config: Config,
    account: RunAccount | None = None,
    trace: RunTrace | None = None,
    seen: RunCursor | None = None,
    titler: ThreadTitler | None = None,
) -> ThreadTurn:
    """Reconcile, commit and start the run (or follow it, or answer a hydrate); ``RequestError`` before any byte.

    ``seen`` is a reconnecting client's cursor: when it names the run being followed, the events it saw
    are left out, and so is the snapshot a follower otherwise gets first.

    ``services`` is None when no store is open; ``config`` is the agents' config (it may have been reloaded).
    A thread held by a run whose producer died is first recovered (``services.recovery``, recovery.py).
    ``account`` records the run's usage; ``trace`` (tracing on) is the run's span: the detached run ends it,
    not the request. ``titler`` (the agent titles its threads) writes the title after a first answer.
    """
    if services is None:
        raise RequestError(503, "store_unavailable", "this agent keeps conversations but no store is open; restart")
    store, run_log, metrics, recovery = services.store, services.run_log, services.metrics, services.recovery
    base_dir, finish_on_disconnect = config.base_dir, config.store.finish_on_disconnect
    thread_id = _thread_id(run_input)
    run_key = new_id("run")  # the store's own id for this run; a client's runId is never trusted there
    log_id = run_log_id(run_key, protocol.name)
    approves = partial(_approves, agent)
    writer: RunWriter | None = None
    taken = False
    try:
        for attempt in range(_ATTEMPTS):
            known = await _read_thread(store, caller, agent, thread_id, recovery)
            stored: list[StoredMessage] = await store.messages(known) if known is not None else []
            summary = await store.context_summary(known) if known is not None and agent.summary_model else None
            running = known is not None and known.active_run is not None
            plan = plan_turn(
                stored,
                run_input,
                protocol=protocol.threads,
                server_tools=agent.server_tools,
                running=running,
                approves=approves,
            )
            if plan.action == "follow" and known is not None and known.active_run is not None:
                replay = await _follow(run_log, known, stored, agent, protocol, recovery, seen)
                if replay is not None:
                    return ThreadTurn(replay)
                # Nothing to follow (the run's producer died, or its log expired): as if no run held it.
                plan = plan_turn(
                    stored, run_input, protocol=protocol.threads, server_tools=agent.server_tools, approves=approves
                )
            if running and attempt > 0 and plan.action == "run":
                raise ThreadBusy()  # a live run holds the thread and this request adds something new
            # Everything that can refuse the request (here a prompt gone from the config) precedes the take.
            inputs = turn_inputs(run_input, plan, agent, known, protocol=protocol.threads, base_dir=base_dir)
            if plan.action in ("hydrate", "refuse"):
                # Only if no run took the thread since it was read (its messages may be newer): else read again.
                if known is not None and attempt < _ATTEMPTS - 1 and not await _unchanged(store, caller, agent, known):
                    continue
                if plan.action == "refuse":
                    raise nothing_to_answer()
                return ThreadTurn(protocol.encode(inputs.hydrate, agent.config, _finished()))
            if writer is None:
                writer = await _open_log(run_log, log_id)  # before the take: whoever sees the run can follow it
            try:
                thread = await store.begin_run(
                    caller.owner,
                    agent.name,
                    thread_id,
                    run_key,
                    revision=known.revision if known is not None else 0,
                    append=plan.append,
                    drop_from_seq=plan.drop_from_seq,
                    dead_run=running,
                    client_run=_client_run(run_input, protocol),
                )
                taken = True
                break
            except ThreadBusy:
                # Read again: the run holding the thread may be answering this very request (a duplicate).
                if attempt == _ATTEMPTS - 1:
                    raise
        else:  # pragma: no cover - the loop breaks, returns or raises
            raise ThreadBusy()
    finally:
        if writer is not None and not taken:
            await _discard_log(writer)
    assert writer is not None  # the thread was taken, so the log was opened
    if trace is not None:
        _trace_prompt(trace, known, inputs.agent)
    run = ThreadRun(
        store,
        thread,
        run_key,
        run_agent(
            inputs.on_thread(store, thread, caller.owner),
            inputs.model,
            stopping=services.stopping,
            metrics=metrics,
            account=account,
            trace=trace,
            summaries=SummaryKeeper(store, thread, run_key, stored, summary) if agent.summary_model else None,
            retracts=retracts_steps(protocol, agent.config),
        ),
        TurnRecorder(plan.message_id if protocol.threads.names_the_answer and not plan.continues else None),
        writer,
        encode=partial(protocol.encode, inputs.encode, agent.config),
        interrupted=partial(protocol.interrupted, agent.config),
        finish_on_disconnect=finish_on_disconnect,
        trace=trace,
        model=(agent.config.provider_name, agent.config.model_name),
        answered=titler.for_run(store, thread, run_key, plan) if titler is not None else None,
    )
    services.runs.add(run)
    run.task.add_done_callback(lambda _: services.runs.discard(run))
    return ThreadTurn(run.follow(run_log.follow(log_id)), run.task)


def _thread_id(run_input: RunInput) -> str:
    """The request's thread id, or 422 ``invalid_thread_id``."""
    if not run_input.thread_id or len(run_input.thread_id) > MAX_THREAD_ID:
        raise RequestError(
            422,
            "invalid_thread_id",
            f"a stored conversation needs a thread id (useChat id, threadId) of 1-{MAX_THREAD_ID} characters",
        )
    return run_input.thread_id


async def _read_thread(
    store: ThreadStore, caller: Caller, agent: Agent, thread_id: str, recovery: RunRecovery | None
) -> ThreadInfo | None:
    """The caller's thread, if any; one held by a run whose producer died is recovered first (and read again)."""
    known = await store.get_thread(caller.owner, agent.name, thread_id)
    if known is not None and known.active_run is not None and recovery is not None:  # noqa: SIM102
        if await recovery.recover(known):  # its producer died: its turn is saved, the thread is free
            known = await store.get_thread(caller.owner, agent.name, thread_id)
    return known


async def _follow(
    run_log: RunLog,
    known: ThreadInfo,
    stored: list[StoredMessage],
    agent: Agent,
    protocol: UIProtocol,
    recovery: RunRecovery | None,
    seen: RunCursor | None = None,
) -> AsyncGenerator[bytes, None] | None:
    """The running run's stream from its start (the resume path), or None when it cannot be replayed.

    A follower that finds the producer dead recovers its turn (``recovery``) before its error ending.
    A cursor ``seen`` on this run (its client's id) starts the stream after the events the client saw.
    """
    run_id = known.active_run
    assert run_id is not None
    before = [replace(m.message, id=m.public_id) for m in stored if m.run_id != run_id]
    ending = partial(protocol.interrupted, agent.config)
    lost = partial(recovery.recover, known) if recovery is not None else None
    skip = seen.events if seen is not None and seen.run_id == known.last_client_run else 0
    log_id = run_log_id(run_id, protocol.name)
    return await replay_run(run_log, log_id, ending, protocol.rejoined(before), lost, seen=skip)


def _client_run(run_input: RunInput, protocol: UIProtocol) -> str | None:
    """The client's id for this run, kept on the thread: only a protocol whose client names runs, and of id size."""
    run_id = run_input.run_id
    return run_id if protocol.threads.names_runs and 0 < len(run_id) <= MAX_ID_LENGTH else None


async def _unchanged(store: ThreadStore, caller: Caller, agent: Agent, known: ThreadInfo) -> bool:
    """Whether the thread is still at the revision read (its messages were read at that revision)."""
    current = await store.get_thread(caller.owner, agent.name, known.id)
    return current is not None and current.revision == known.revision


async def _open_log(run_log: RunLog, log_id: str) -> RunWriter:
    try:
        return await run_log.create(log_id)
    except Exception as exc:
        raise RequestError(503, "run_log_unavailable", "the run log cannot be reached; try again") from exc


async def _discard_log(writer: RunWriter) -> None:
    """Close the log of a run that never started (the thread was not taken): nobody follows it."""
    try:
        await asyncio.shield(writer.close("failed"))
    except Exception:
        logger.exception("closing the run log of %r, which never started, failed", writer.run_id)


def _approves(agent: Agent, approval: ApprovalResponse, call: ToolCallPart) -> bool:
    return agent.approvals.verify(approval.approval_id, agent.name, call.tool_call_id, call.name, call.arguments)


def _trace_prompt(trace: RunTrace, known: ThreadInfo | None, agent: Agent) -> None:
    """The thread's own system message on the run's span: a named prompt (its name) or text."""
    system = known.system if known is not None else SystemState()
    if system.kind != "agent":
        trace.thread_prompt(system.value if system.kind == "prompt" else None, agent.prompt)


async def _finished() -> AsyncIterator[RunEvent]:
    yield RunFinished("stop")

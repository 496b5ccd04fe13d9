"""The ``thread`` stage: a request on an agent with ``conversations = "server"`` meets its stored thread.

Between decode and run: load the caller's thread, reconcile what the client sent (app/thread_plan.py),
take the thread for this run and commit the user's turn in one transaction (409 ``thread_busy`` when
another run holds it), then start the run detached from the request (app/thread_run.py), writing its
stream to the run log the request then follows. The model gets the stored history under the thread's
system message, rendered per request and never stored.

An AG-UI request that adds nothing on a thread whose run is still going is a reconnect: it follows
that run from its ``RUN_STARTED`` (docs/resume.md); with nothing to replay it is a hydrate.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator, AsyncIterator
from dataclasses import dataclass, replace
from functools import partial
from pathlib import Path

from chatgate.agents import Agent, prompt_template
from chatgate.approval_ledger_store import StoreApprovalLedger
from chatgate.caller import Caller
from chatgate.errors import RequestError
from chatgate.events import RunEvent, RunFinished
from chatgate.history import Message, SystemMessage
from chatgate.ids import new_id
from chatgate.metrics import Metrics
from chatgate.prompts import PromptTemplate
from chatgate.protocol import UIProtocol
from chatgate.run_follow import replay_run, run_log_id
from chatgate.run_input import RunInput
from chatgate.run_recovery import RunRecovery
from chatgate.runlog import RunLog
from chatgate.runner import run_agent
from chatgate.store import StoredMessage, SystemState, ThreadBusy, ThreadStore
from chatgate.thread_plan import plan_turn
from chatgate.thread_run import ThreadRun, TurnRecorder

__all__ = ["MAX_THREAD_ID", "ThreadTurn", "open_thread_turn", "thread_agent"]

_ATTEMPTS = 3
MAX_THREAD_ID = 200
"""The longest thread id a stored conversation accepts."""


@dataclass(frozen=True, slots=True)
class ThreadTurn:
    """What the server streams: the protocol's frames for this request."""

    frames: AsyncGenerator[bytes, None]


async def open_thread_turn(
    store: ThreadStore | None,
    agent: Agent,
    caller: Caller,
    run_input: RunInput,
    *,
    protocol: UIProtocol,
    run_log: RunLog,
    base_dir: Path,
    stopping: asyncio.Event,
    finish_on_disconnect: bool,
    runs: set[ThreadRun],
    metrics: Metrics | None = None,
    recovery: RunRecovery | None = None,
) -> ThreadTurn:
    """Reconcile, commit and start the run (or follow it, or answer a hydrate); ``RequestError`` before any byte.

    A thread held by a run whose producer died is first recovered (``recovery``, app/run_recovery.py).
    """
    if store is None:
        raise RequestError(503, "store_unavailable", "this agent keeps conversations but no store is open; restart")
    if not run_input.thread_id or len(run_input.thread_id) > MAX_THREAD_ID:
        raise RequestError(
            422,
            "invalid_thread_id",
            f"a stored conversation needs a thread id (useChat id, threadId) of 1-{MAX_THREAD_ID} characters",
        )
    run_key = new_id("run")  # the store's own id for this run; a client's runId is never trusted there
    for attempt in range(_ATTEMPTS):
        known = await store.get_thread(caller.owner, agent.name, run_input.thread_id)
        if known is not None and known.active_run is not None and recovery is not None:  # noqa: SIM102
            if await recovery.recover(known):  # its producer died: its turn is saved, the thread is free
                known = await store.get_thread(caller.owner, agent.name, run_input.thread_id)
        stored: list[StoredMessage] = await store.messages(known) if known is not None else []
        plan = plan_turn(stored, run_input, protocol=protocol.name, server_tools=agent.server_tools)
        if plan.hydrate:
            if known is not None and known.active_run is not None:
                log_id = run_log_id(known.active_run, protocol.name)
                before = [replace(m.message, id=m.public_id) for m in stored if m.run_id != known.active_run]
                ending = partial(protocol.interrupted, agent.config)
                lost = partial(recovery.recover, known) if recovery is not None else None
                replay = await replay_run(run_log, log_id, ending, protocol.rejoined(before), lost)
                if replay is not None:
                    return ThreadTurn(replay)
            hydrate = replace(run_input, snapshot=plan.history)
            return ThreadTurn(protocol.encode(hydrate, agent.config, _finished()))
        # Everything that can refuse the request happens before the thread is taken.
        system = known.system if known is not None else SystemState()
        model_agent = thread_agent(agent, system, base_dir)
        client_system = _client_system(agent, system, run_input.messages)
        try:
            thread = await store.begin_run(
                caller.owner,
                agent.name,
                run_input.thread_id,
                run_key,
                revision=known.revision if known is not None else 0,
                append=plan.append,
                drop_from_seq=plan.drop_from_seq,
                dead_run=known is not None and known.active_run is not None,
            )
            break
        except ThreadBusy:
            current = await store.get_thread(caller.owner, agent.name, run_input.thread_id)
            if attempt == _ATTEMPTS - 1 or (current is not None and current.active_run is not None):
                raise
    else:  # pragma: no cover - the loop either breaks or raises
        raise ThreadBusy()
    model_input = replace(run_input, messages=(*client_system, *plan.history))
    recorder = TurnRecorder(plan.message_id if protocol.name == "vercel-ai" and not plan.continues else None)
    # A thread's approvals are claimed in the store, beside its history, on every replica alike.
    model_agent = replace(model_agent, approval_ledger=StoreApprovalLedger(store, thread))
    encode_input = replace(
        run_input,
        continue_message_id=plan.message_id,
        snapshot=plan.history if plan.behind and protocol.name == "ag-ui" else None,
    )
    log_id = run_log_id(run_key, protocol.name)
    try:
        writer = await run_log.create(log_id)
    except Exception as exc:
        await store.finish_run(thread, run_key, [], "error")
        raise RequestError(503, "run_log_unavailable", "the run log cannot be reached; try again") from exc
    run = ThreadRun(
        store,
        thread,
        run_key,
        run_agent(model_agent, model_input, stopping=stopping, metrics=metrics),
        recorder,
        writer,
        encode=partial(protocol.encode, encode_input, agent.config),
        interrupted=partial(protocol.interrupted, agent.config),
        finish_on_disconnect=finish_on_disconnect,
    )
    runs.add(run)
    run.task.add_done_callback(lambda _: runs.discard(run))
    return ThreadTurn(run.follow(run_log.follow(log_id)))


def thread_agent(agent: Agent, system: SystemState, base_dir: Path) -> Agent:
    """``agent`` answering under the thread's system message (the agent's own, a named prompt or text)."""
    if system.kind == "agent":
        return agent
    if system.kind == "prompt":
        source = agent.config.prompts.get(system.value or "")
        if source is None:
            raise RequestError(409, "unknown_prompt", f"the thread's prompt {system.value!r} is no longer configured")
        template = prompt_template(agent.config.model_copy(update={"system_prompt": source}), base_dir)
    else:
        template = PromptTemplate(system.value or "")
    # Under "client" policy the thread's own message stands in for a client system message.
    config = agent.config.model_copy(update={"system_prompt_fallback": True})
    return replace(agent, prompt=template, config=config)


def _client_system(agent: Agent, system: SystemState, messages: tuple[Message, ...]) -> tuple[Message, ...]:
    """A client system message reaches the model only under ``client`` policy on a thread with none of its own.

    It is never stored.
    """
    if agent.config.manage_system_prompt != "client" or system.kind != "agent":
        return ()
    return tuple(message for message in messages if isinstance(message, SystemMessage))


async def _finished() -> AsyncIterator[RunEvent]:
    yield RunFinished("stop")

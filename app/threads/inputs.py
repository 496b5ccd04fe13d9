"""A planned turn's inputs: the request forked once, by what the plan decided, into what each stage needs.

The model answers the stored history (under the thread's system message, never stored; a client system
message only under ``client`` policy on a thread with none of its own) with the approvals of calls still
unanswered. The protocol encodes the stream for the request as the client sent it, plus what the thread
knows: the run it follows, the id of the answer it continues, and the thread as a snapshot first when
the client is behind. A replay that gets the thread back gets it as the request's snapshot.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path

from chatgate.approvals import StoreApprovalLedger, approval_scope
from chatgate.errors import RequestError
from chatgate.history import Message, SystemMessage
from chatgate.protocol import ThreadCapabilities
from chatgate.run import Agent, PromptTemplate, prompt_template
from chatgate.run_input import RunInput
from chatgate.store import SystemState, ThreadInfo, ThreadStore
from chatgate.threads.plan import ThreadPlan

__all__ = ["TurnInputs", "thread_agent", "turn_inputs"]


@dataclass(frozen=True, slots=True)
class TurnInputs:
    """What one turn on a stored thread hands on: the model's input and agent, the protocol's inputs."""

    model: RunInput
    """What the model answers: the thread's history and the approvals of calls still unanswered."""
    agent: Agent
    """The agent under the thread's system message (the request's agent for a replay: no run)."""
    encode: RunInput
    """What the protocol encodes the run's stream for."""
    hydrate: RunInput
    """A replay answered with the thread: the request with the thread as its snapshot."""

    def on_thread(self, store: ThreadStore, thread: ThreadInfo, owner: str) -> Agent:
        """``agent`` once the run holds ``thread``: its approvals claimed in the store beside the history.

        On every replica alike; signed as this owner's on this thread and claimed in this thread's rows.
        """
        scope = approval_scope(self.agent.name, owner, thread.key)
        return replace(self.agent, approval_ledger=StoreApprovalLedger(store, thread), approval_scope=scope)


def turn_inputs(
    run_input: RunInput,
    plan: ThreadPlan,
    agent: Agent,
    known: ThreadInfo | None,
    *,
    protocol: ThreadCapabilities,
    base_dir: Path,
) -> TurnInputs:
    """``run_input`` forked for the turn ``plan`` decides on ``known`` (None: a new thread).

    Raises 409 ``unknown_prompt`` for a run on a thread whose named prompt is no longer configured.
    """
    system = known.system if known is not None else SystemState()
    client_system = _client_system(agent, system, run_input.messages)
    return TurnInputs(
        model=replace(run_input, messages=(*client_system, *plan.history), approvals=plan.approvals),
        agent=thread_agent(agent, system, base_dir) if plan.action == "run" else agent,
        encode=replace(
            run_input,
            parent_run_id=_parent_run(run_input, plan, known, protocol),
            continue_message_id=plan.message_id,
            snapshot=plan.history if plan.behind and protocol.snapshot_when_behind else None,
        ),
        hydrate=replace(run_input, snapshot=plan.history),
    )


def thread_agent(agent: Agent, system: SystemState, base_dir: Path) -> Agent:
    """``agent`` answering under the thread's system message (the agent's own, a named prompt or text)."""
    if system.kind == "agent":
        return agent
    if system.kind == "prompt":
        source = agent.config.prompts.get(system.value or "")
        if source is None:
            raise RequestError(409, "unknown_prompt", f"the thread's prompt {system.value!r} is no longer configured")
        template = prompt_template(agent.config.model_copy(update={"system_prompt": source, "version": None}), base_dir)
    else:
        template = PromptTemplate(system.value or "")
    # Under "client" policy the thread's own message stands in for a client system message.
    config = agent.config.model_copy(update={"system_prompt_fallback": True})
    # The thread's message wins over the agent's variant, and is recorded as such (docs/prompts.md).
    variant = f"prompt:{system.value}" if system.kind == "prompt" else "thread"
    return replace(agent, prompt=template, config=config, variant=variant)


def _client_system(agent: Agent, system: SystemState, messages: tuple[Message, ...]) -> tuple[Message, ...]:
    """A client system message reaches the model only under ``client`` policy on a thread with none of its own.

    It is never stored.
    """
    if agent.config.manage_system_prompt != "client" or system.kind != "agent":
        return ()
    return tuple(message for message in messages if isinstance(message, SystemMessage))


def _parent_run(
    run_input: RunInput, plan: ThreadPlan, known: ThreadInfo | None, protocol: ThreadCapabilities
) -> str | None:
    """The run this one follows: the client's ``parentRunId`` if sent, else the last run it answers or regenerates."""
    if run_input.parent_run_id or not protocol.names_runs or not plan.follows_last_run or known is None:
        return run_input.parent_run_id
    return known.last_client_run

"""Tool calls between model calls: the outcome of every call a step completed, and pending calls settled.

After a step, every call it completed gets its outcome, whatever the step's finish reason (a model can
make a call and then run into ``max_tokens``): a server tool runs and its result goes back to the model
in the next step; a server tool marked ``requires_approval`` pauses the run with
``ToolApprovalRequested`` (a unique token signed over the agent, its scope (owner and thread) and the
exact call); a tool the frontend runs ends the run, and the client's next request carries the result.
A call whose arguments were cut off (not a JSON object) never runs and is never handed to anyone: it
ends as an error result (``CUT_OFF``) the client and, next time, the model see.

Before the first step, the calls the history left unanswered are settled: an approval runs its tool (or
reports it denied) once, claimed in the app's ledger first (app/approvals/ledger.py), so a replay gets
the first outcome, or is told it is already being answered, without the tool running again. Only calls
the server itself saw the model make in this run, or that carry a valid approval token, are ever
executed: a tool call in client-sent history is never run on the client's word.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING

from chatgate.approvals import ApprovalLedgerError, ApprovalOutcome, Claimed, Pending, Settled
from chatgate.background import in_background
from chatgate.errors import StoreUnavailable
from chatgate.events import FinishReason, RunEvent, ToolApprovalRequested, ToolDenied, ToolResult
from chatgate.history import AssistantMessage, FilePart, Message, ToolCallPart, ToolMessage
from chatgate.run.agents import Agent
from chatgate.run.endings import RunError
from chatgate.run.model_call import ModelCall
from chatgate.run_input import ApprovalResponse, RunInput

if TYPE_CHECKING:
    from chatgate.tracing import RunTrace, ToolTrace

__all__ = [
    "ALREADY_ANSWERING",
    "APPROVALS_UNAVAILABLE",
    "CUT_OFF",
    "NOT_RUN",
    "StepTools",
    "settle_pending_calls",
    "tool_message",
]

logger = logging.getLogger("chatgate.runner")

NOT_RUN = "This tool call was not run: the server has no record of making it."
ALREADY_ANSWERING = "This approval is already being answered by another request; the tool was not run again."
APPROVALS_UNAVAILABLE = "Approvals cannot be checked right now; please try again."
CUT_OFF = "This tool call was not run: its arguments were cut off before they were complete."


class StepTools:
    """The tool calls of one finished step: their outcomes, and whether the run ends with it."""

    __slots__ = ("_agent", "_history", "_trace", "ends_run", "pending")

    def __init__(self, agent: Agent, history: list[Message], trace: RunTrace | None) -> None:
        self._agent, self._history, self._trace = agent, history, trace
        self.ends_run = False
        """Only a step that ended for its tool calls, all of them the server's and run, goes on."""
        self.pending: tuple[str, ...] = ()
        """The calls the client runs: the run ends waiting on them."""

    async def dispatch(self, call: ModelCall, reason: FinishReason) -> AsyncIterator[RunEvent]:
        """Each completed call's outcome; the answer and the results join the history for the next step."""
        if call.answer is None:  # no server tools: calls are the client's, except those cut off
            for call_id in call.cut_off:
                yield ToolResult(call_id, CUT_OFF, is_error=True)
            self.pending = tuple(call_id for call_id in call.called if call_id not in call.cut_off)
            self.ends_run = True
            return
        message = call.answer.message()
        if reason != "tool_calls" and not message.tool_calls:
            self.ends_run = True
            return
        self._history.append(message)
        frontend: list[str] = []
        paused = False
        for tool_call in message.tool_calls:
            event = await self._outcome(tool_call, call.cut_off)
            if event is None:  # the frontend runs this one; its result comes with the next request
                frontend.append(tool_call.tool_call_id)
            elif type(event) is ToolResult:
                self._history.append(tool_message(event))
            paused = paused or event is None or type(event) is ToolApprovalRequested
            if event is not None:
                yield event
        self.ends_run, self.pending = paused or reason != "tool_calls", tuple(frontend)

    async def _outcome(self, call: ToolCallPart, cut_off: list[str]) -> ToolResult | ToolApprovalRequested | None:
        """A call's result, or its approval request; None for a call the frontend runs."""
        agent = self._agent
        tool = agent.server_tools.get(call.name)
        if call.tool_call_id in cut_off:
            return ToolResult(call.tool_call_id, CUT_OFF, is_error=True)
        if tool is None:
            return None
        if not tool.requires_approval:
            return await _call(agent, call, self._trace)
        token = agent.approvals.token(
            agent.name, call.tool_call_id, call.name, call.arguments, scope=agent.approval_scope
        )
        if self._trace is not None:
            self._trace.approval_requested(call)
        return ToolApprovalRequested(call.tool_call_id, call.name, token)


async def settle_pending_calls(
    agent: Agent, run_input: RunInput, history: list[Message], trace: RunTrace | None = None
) -> AsyncIterator[RunEvent]:
    """Give every unanswered server tool call in the history a result before the model is called.

    A call with a valid approval runs, or is reported denied, and the client sees the outcome; the same
    approval sent again, at once or later, gets the first outcome (or ``ALREADY_ANSWERING``) without
    the tool running again. Any other call never runs: the model is told so, and the client, which never
    saw it run, is told nothing.
    """
    answered = {m.tool_call_id for m in history if isinstance(m, ToolMessage)}
    last_assistant = next((m for m in reversed(history) if isinstance(m, AssistantMessage)), None)
    if last_assistant is None:
        return
    insert_at = history.index(last_assistant) + 1
    for call in last_assistant.tool_calls:
        tool = agent.server_tools.get(call.name)
        if tool is None or call.tool_call_id in answered:
            continue
        approval = _verified_approval(agent, run_input, call) if tool.requires_approval else None
        event: ToolResult | ToolDenied | None = None
        if approval is None:
            history.insert(insert_at, ToolMessage(call.tool_call_id, NOT_RUN, is_error=True))
        else:
            event = await _answer(agent, call, approval, trace)
        if event is not None:
            history.insert(insert_at, tool_message(event))
            yield event
        insert_at += 1


def _verified_approval(agent: Agent, run_input: RunInput, call: ToolCallPart) -> ApprovalResponse | None:
    for approval in run_input.approvals:
        if approval.tool_call_id not in (None, call.tool_call_id):
            continue
        if agent.approvals.verify(
            approval.approval_id, agent.name, call.tool_call_id, call.name, call.arguments, scope=agent.approval_scope
        ):
            return approval
        if approval.tool_call_id == call.tool_call_id:
            logger.warning("agent %r: refused a forged approval for tool call %r", agent.name, call.tool_call_id)
    return None


async def _answer(
    agent: Agent, call: ToolCallPart, approval: ApprovalResponse, trace: RunTrace | None = None
) -> ApprovalOutcome:
    """Claim the approval, then run the tool (or deny it), then record the outcome; or the first outcome."""
    span = trace.approval(call) if trace is not None else None
    try:
        claim = await agent.approval_ledger.claim(approval.approval_id, scope=agent.approval_scope)
    except ApprovalLedgerError as exc:
        logger.error(
            "agent %r: approval ledger unavailable, tool call %r not run: %s", agent.name, call.tool_call_id, exc
        )
        if span is not None:
            span.ended(ToolResult(call.tool_call_id, APPROVALS_UNAVAILABLE, is_error=True), "unavailable")
        raise RunError(APPROVALS_UNAVAILABLE) from exc
    if isinstance(claim, Settled):
        if span is not None:
            span.ended(None, "replayed")
        return claim.outcome
    if isinstance(claim, Pending):
        logger.warning("agent %r: approval for tool call %r is already being answered", agent.name, call.tool_call_id)
        if span is not None:
            span.ended(None, "already_answering")
        return ToolResult(call.tool_call_id, ALREADY_ANSWERING, is_error=True)
    # Shielded: a client hanging up mid-tool must not stop the outcome being recorded for its replay.
    task = in_background(_run_and_record(agent, call, approval, claim, trace, span))
    return await asyncio.shield(task)


async def _run_and_record(
    agent: Agent,
    call: ToolCallPart,
    approval: ApprovalResponse,
    claim: Claimed,
    trace: RunTrace | None = None,
    span: ToolTrace | None = None,
) -> ApprovalOutcome:
    if approval.approved:
        outcome: ApprovalOutcome = await _call(agent, call, trace, span)
    else:
        outcome = ToolDenied(call.tool_call_id, approval.reason)
    if span is not None:
        span.ended(None, "approved" if approval.approved else "denied")
    try:
        await agent.approval_ledger.record(claim, outcome)
    except (ApprovalLedgerError, StoreUnavailable) as exc:
        # The claim stays pending until it expires: replays are told it is being answered, never re-run.
        logger.error("agent %r: outcome of tool call %r not recorded: %s", agent.name, call.tool_call_id, exc)
    return outcome


async def _call(
    agent: Agent, call: ToolCallPart, trace: RunTrace | None = None, within: ToolTrace | None = None
) -> ToolResult:
    tool = agent.server_tools[call.name]
    span = trace.tool_call(call, within, tool.trace_attributes) if trace is not None else None
    outcome = await tool.call(call.arguments)
    result = ToolResult(
        call.tool_call_id, outcome.content, outcome.is_error, output=outcome.value, images=outcome.images
    )
    if span is not None:
        span.ended(result)
    return result


def tool_message(event: ToolResult | ToolDenied, *, message_id: str = "") -> ToolMessage:
    """The history message a tool's outcome becomes: its result, or the user's denial with its reason."""
    if isinstance(event, ToolDenied):
        reason = f" Reason: {event.reason}" if event.reason else ""
        return ToolMessage(event.tool_call_id, f"The user denied this tool call.{reason}", True, id=message_id)
    images = tuple(FilePart(media_type, f"data:{media_type};base64,{data}") for media_type, data in event.images)
    return ToolMessage(event.tool_call_id, event.content, event.is_error, id=message_id, images=images)

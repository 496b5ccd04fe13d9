"""One run: the system-prompt policy, model calls and server tool steps, and one terminal event.

A run is a loop of model calls ("steps"). After a call that ends in tool calls:

- server tools run here and their results go back to the model in the next step;
- a server tool marked ``requires_approval`` pauses the run with ``ToolApprovalRequested`` (a unique
  token signed over the agent, its scope (owner and thread) and the exact call); the next request's
  approval runs it or reports it denied, once: the approval is claimed in the app's ledger first
  (app/approvals/ledger.py), and a replay gets the first outcome, or is told it is already being
  answered, without the tool running again;
- a tool the frontend runs ends the run, and the client's next request carries the result.

Every call a step completes gets its outcome whatever the step's finish reason (a model can make a
call and then run into ``max_tokens``): server tools run, then the run ends with that reason unless it
was ``tool_calls``. A call whose arguments were cut off (not a JSON object) never runs and is never
handed to anyone: it ends as an error result (``CUT_OFF``) the client and, next time, the model see.

Only calls the server itself saw the model make in this run, or that carry a valid approval token, are
ever executed: a tool call in client-sent history is never run on the client's word.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import AsyncIterator
from dataclasses import replace
from typing import TYPE_CHECKING

from chatgate.approvals import ApprovalLedgerError, ApprovalOutcome, Claimed, Pending, Settled
from chatgate.context import (
    CONTEXT_LENGTH_EXCEEDED,
    ContextBudget,
    ContextSummary,
    ContextView,
    SummaryKeeper,
    alternate_roles,
    write_summary,
)
from chatgate.errors import ChatgateError, ProviderError, RequestError, StoreUnavailable
from chatgate.events import (
    FinishReason,
    ModelFinished,
    RunEvent,
    RunFailed,
    RunFinished,
    StepFinished,
    StepStarted,
    TextDelta,
    TextEnd,
    TextStart,
    ToolApprovalRequested,
    ToolCallEnd,
    ToolDenied,
    ToolResult,
    Usage,
    UsageTally,
)
from chatgate.history import (
    ActivityMessage,
    AssistantMessage,
    FilePart,
    Message,
    SystemMessage,
    ToolCallPart,
    ToolMessage,
    complete_arguments,
)
from chatgate.ids import new_id
from chatgate.leak_guard import PROMPT_LEAK_MESSAGE, PromptLeak, start_guard
from chatgate.providers import ModelRequest
from chatgate.run.agents import Agent
from chatgate.run.assembly import MessageAssembler
from chatgate.run.policy import apply_system_prompt_policy
from chatgate.run.prompts import PromptRenderError, RequestFacts
from chatgate.run.tools import LiveTools, ToolsUnavailable
from chatgate.run_input import ApprovalResponse, RunInput, ToolDefinition
from chatgate.telemetry import Metrics
from chatgate.usage import BudgetExceeded, RunAccount

if TYPE_CHECKING:
    from chatgate.tracing import ModelCallTrace, RunTrace, ToolTrace

__all__ = [
    "ALREADY_ANSWERING",
    "APPROVALS_UNAVAILABLE",
    "CUT_OFF",
    "NOT_RUN",
    "SHUTTING_DOWN",
    "build_model_request",
    "run_agent",
    "tool_message",
]

logger = logging.getLogger("chatgate.runner")

NOT_RUN = "This tool call was not run: the server has no record of making it."
SHUTTING_DOWN = "The server is restarting; please try again."
ALREADY_ANSWERING = "This approval is already being answered by another request; the tool was not run again."
APPROVALS_UNAVAILABLE = "Approvals cannot be checked right now; please try again."
CUT_OFF = "This tool call was not run: its arguments were cut off before they were complete."

# Tool runs for a claimed approval, kept referenced until they have recorded their outcome.
_answering: set[asyncio.Task[ApprovalOutcome]] = set()


def build_model_request(agent: Agent, run_input: RunInput, *, system_prompt: str | None = None) -> ModelRequest:
    """What the model receives for ``run_input``: the history after the agent's system-prompt policy.

    ``system_prompt`` is this request's rendered prompt; without it a static prompt is used as is.
    Instructions go right after the leading system messages: they reach the model, never the history.
    """
    return _model_request(agent, run_input, system_prompt)[0]


def _model_request(agent: Agent, run_input: RunInput, system_prompt: str | None) -> tuple[ModelRequest, int]:
    """The model request, and how many client system messages the policy removed."""
    config = agent.config
    if system_prompt is None and agent.prompt is not None and agent.prompt.is_static:
        system_prompt = agent.prompt.template
    result = apply_system_prompt_policy(
        # A frontend's activity messages are its own UI state: kept in the thread, never the model's.
        tuple(message for message in run_input.messages if not isinstance(message, ActivityMessage)),
        policy=config.manage_system_prompt,
        system_prompt=system_prompt,
        fallback=config.system_prompt_fallback,
        agent_name=agent.name,
    )
    messages = result.messages
    instructions = _instructions(agent, run_input)
    if instructions:
        head = next((i for i, m in enumerate(messages) if not isinstance(m, SystemMessage)), len(messages))
        messages = (*messages[:head], SystemMessage(instructions, id="instructions"), *messages[head:])
    request = ModelRequest(
        model=config.model_name,
        messages=messages,
        tools=_offered_tools(agent, run_input),
        settings=config.model_settings,
    )
    return request, result.stripped


def _instructions(agent: Agent, run_input: RunInput) -> str:
    parts = [agent.config.instructions or ""]
    requested = run_input.variables.get("instructions")
    if agent.config.allow_request_instructions and isinstance(requested, str):
        parts.append(requested)
    return "\n\n".join(part for part in parts if part)


async def _render_prompt(agent: Agent, run_input: RunInput) -> str | None:
    prompt = agent.prompt
    if prompt is None or prompt.is_static:
        return None
    facts = RequestFacts(agent=agent.name, thread_id=run_input.thread_id, config=agent.config.model_dump(mode="json"))
    try:
        return await prompt.render(facts, client_values=run_input.variables)
    except PromptRenderError as exc:
        logger.error("agent %r run %r: %s", agent.name, run_input.run_id, exc)
        raise RunError("The system prompt could not be prepared.") from exc


def _offered_tools(agent: Agent, run_input: RunInput) -> tuple[ToolDefinition, ...]:
    """Server tools, then the agent's declared client tools, then the client's; a name is offered once."""
    offered: dict[str, ToolDefinition] = {name: tool.definition for name, tool in agent.server_tools.items()}
    for tool in (*agent.client_tools, *run_input.tools):
        offered.setdefault(tool.name, tool)
    return tuple(offered.values())


async def run_agent(
    agent: Agent,
    run_input: RunInput,
    *,
    stopping: asyncio.Event | None = None,
    metrics: Metrics | None = None,
    account: RunAccount | None = None,
    trace: RunTrace | None = None,
    summaries: SummaryKeeper | None = None,
) -> AsyncIterator[RunEvent]:
    """Run ``agent`` on ``run_input``; the last event is always ``RunFinished`` or ``RunFailed``.

    Failures are logged here with their detail and reach the client only as a short message. Once
    ``stopping`` is set (the server is shutting down) the run ends at its next model event with a
    ``RunFailed`` the client can act on, instead of being cut off. ``metrics`` records each model call;
    ``account`` checks budgets before each one and records the run's usage (app/usage/).
    ``trace`` (tracing on) gets a span per model call, tool call and approval, and is ended here.
    ``summaries`` is a stored thread's summary under ``strategy = "summarize"``: without it (a stateless
    agent) a prompt over the budget leaves turns out as ``drop_oldest`` does.
    """
    # One generator, not a wrapper turning a second one's exceptions into RunFailed: every token
    # passes through here, and each generator it passes through costs CPU (docs/performance.md).
    is_stopping = (stopping or asyncio.Event()).is_set
    tally = UsageTally()  # what the run's ending reports, in both protocols
    streamed = False  # some model call sent something: a break-off then leaves a partial answer
    provider_name, model_name = agent.config.provider_name, agent.config.model_name
    try:
        if isinstance(agent.server_tools, LiveTools):  # a source still connecting is waited for, never left out
            await agent.server_tools.ready()
        system_prompt = await _render_prompt(agent, run_input)
        request, stripped = _model_request(agent, run_input, system_prompt)
        guard_settings = agent.config.leak_guard
        request, guard = start_guard(  # app/leak_guard/: every model event passes it first
            request,
            mode=agent.config.leak_guard_mode,
            min_words=guard_settings.min_words,
            canary=guard_settings.canary,
            markup=guard_settings.markup,
            agent=agent.name,
            run_id=run_input.run_id,
            metrics=metrics,
        )
        if metrics is not None:
            metrics.count_stripped(agent.name, stripped)
        if trace is not None:
            trace.started(run_input, request, stripped)
        history = list(request.messages)
        if agent.server_tools:
            async for event in _settle_pending_calls(agent, run_input, history, trace):
                yield event

        budget = agent.context
        thread = run_input.thread_id or ""
        if budget is not None and budget.waiting_for_window:
            await budget.find_window()
        for step in range(1, agent.max_steps + 1):
            name = f"model-call-{step}"
            yield StepStarted(name)
            assembler = MessageAssembler(new_id("msg")) if agent.server_tools else None
            limit: int | None = None
            while True:  # once more only after a length refusal, on a shorter view
                if budget is None:
                    view = None
                    messages = alternate_roles(history)
                else:
                    summary = summaries.current if summaries is not None else None
                    fold = summaries is not None and limit is None
                    view = budget.view(history, request.tools, thread, limit=limit, summary=summary, fold=fold)
                    if view.fold_to and summaries is not None:
                        written, spent = await _summarize(
                            agent, budget, summaries, run_input, view, history, metrics, account, tally
                        )
                        if spent is not None:
                            yield spent  # the run's usage on the stream includes the summary's
                        if written is not None:
                            view = budget.view(history, request.tools, thread, summary=written)
                    if view.dropped_turns:
                        _dropped(agent, budget, run_input, view, len(history), metrics)
                    messages = view.messages
                reason: FinishReason | None = None
                finished: ModelFinished | None = None
                if account is not None:
                    await account.check()  # over budget: the run ends here, before the call
                meter = metrics.model_call(agent.config.provider_name, agent.name) if metrics is not None else None
                call_trace: ModelCallTrace | None = None
                transcript = assembler  # what a captured span records as the answer
                if trace is not None:
                    call_trace = trace.model_call(replace(request, messages=messages), step)
                    if transcript is None and trace.capture_content:
                        transcript = MessageAssembler(new_id("msg"))
                first_event_at: float | None = None
                usage: Usage | None = None
                cut_off: list[str] = []  # calls whose arguments are not a JSON object
                called: list[str] = []  # every call the model completed in this step
                failure: BaseException | None = None
                refused = False
                if agent.files is not None:  # uploads' references become bytes in this call only
                    messages = await agent.files.inline(messages)
                stream = agent.provider.stream(replace(request, messages=messages))
                guard_filter = guard.filter if guard is not None else _unguarded  # looked up once, not per event
                try:
                    async for event in stream:
                        if is_stopping():
                            raise ServerStopping
                        if first_event_at is None:
                            first_event_at = time.perf_counter()
                            streamed = True
                        if guard is not None:  # a plain call: a generator between would cost every token
                            try:
                                shown = guard_filter(event)
                            finally:  # what it released before (the rest of a stream; a leak's prefix)
                                if guard.released:
                                    for delta in guard.take_released():
                                        if transcript is not None:
                                            transcript.feed(delta)
                                        yield delta
                            if shown is None:
                                continue
                            event = shown
                        if type(event) is not TextDelta:  # nearly every event is one: one check for it
                            if type(event) is ModelFinished:
                                reason, finished = event.reason, event
                                continue
                            if type(event) is Usage:
                                usage = event
                            elif type(event) is ToolCallEnd:
                                called.append(event.tool_call_id)
                                if not complete_arguments(event.arguments):
                                    cut_off.append(event.tool_call_id)
                        if transcript is not None:
                            transcript.feed(event)
                        yield event
                except BaseException as exc:
                    if guard is not None and isinstance(exc, Exception) and not isinstance(exc, _OWN_ENDINGS):
                        for delta in guard.flush():  # the model call failed: what was held is not lost
                            if transcript is not None:
                                transcript.feed(delta)
                            yield delta
                    failure = asyncio.CancelledError() if isinstance(exc, ServerStopping | PromptLeak) else exc
                    refused = limit is None and first_event_at is None and _may_trim_further(budget, view, exc)
                    if not refused:
                        raise
                finally:
                    # Close the upstream now, not whenever the generator is collected: on a hang-up, a
                    # shutdown or a failure, nobody should go on paying for tokens.
                    aclose = getattr(stream, "aclose", None)
                    if aclose is not None:
                        await aclose()
                    if meter is not None:
                        meter.ended(first_event_at, usage, failure)
                    if account is not None:
                        account.add(usage)
                    tally.add(provider_name, model_name, usage)
                    if call_trace is not None:
                        output = transcript.message() if transcript is not None and call_trace.capture_content else None
                        call_trace.ended(finished, usage, failure, output)
                if not refused:
                    break
                assert budget is not None and view is not None
                logger.warning(
                    "agent %r run %r: the model refused about %d prompt tokens for length; trimming further",
                    agent.name,
                    run_input.run_id,
                    view.tokens,
                )
                budget.refused(thread)
                limit = max(1, view.tokens * 3 // 4)
            if budget is not None and view is not None and usage is not None:
                budget.observe(view, history, thread, usage.input_tokens)
            if reason is None:
                raise ProviderError(
                    "the model stream ended without finishing",
                    public_message="The model stream ended early.",
                    kind="interrupted",
                )
            yield StepFinished(name, reason)
            if assembler is None:  # no server tools: calls are the client's, except those cut off
                for call_id in cut_off:
                    yield ToolResult(call_id, CUT_OFF, is_error=True)
                pending = tuple(call_id for call_id in called if call_id not in cut_off)
                yield await _finished(trace, reason, account, tally, pending)
                return
            message = assembler.message()
            if reason != "tool_calls" and not message.tool_calls:
                yield await _finished(trace, reason, account, tally)
                return

            history.append(message)
            paused = False
            frontend: list[str] = []  # calls the client runs: the run ends waiting on them
            for call in message.tool_calls:
                tool = agent.server_tools.get(call.name)
                if call.tool_call_id in cut_off:
                    result = ToolResult(call.tool_call_id, CUT_OFF, is_error=True)
                    history.append(tool_message(result))
                    yield result
                elif tool is None:
                    paused = True  # the frontend runs this one; its result comes with the next request
                    frontend.append(call.tool_call_id)
                elif tool.requires_approval:
                    paused = True
                    token = agent.approvals.token(
                        agent.name, call.tool_call_id, call.name, call.arguments, scope=agent.approval_scope
                    )
                    if trace is not None:
                        trace.approval_requested(call)
                    yield ToolApprovalRequested(call.tool_call_id, call.name, token)
                else:
                    result = await _call(agent, call, trace)
                    history.append(tool_message(result))
                    yield result
            if paused or reason != "tool_calls":  # only a step ended for its tool calls goes on
                yield await _finished(trace, reason, account, tally, tuple(frontend))
                return

        logger.warning("agent %r run %r: stopped after max_steps=%d", agent.name, run_input.run_id, agent.max_steps)
        notice = new_id("msg")
        yield TextStart(notice)
        yield TextDelta(notice, f"[Stopped: this run reached its limit of {agent.max_steps} model steps.]")
        yield TextEnd(notice)
        yield await _finished(trace, "other", account, tally)
    except ServerStopping:
        logger.warning("agent %r run %r: ended early, the server is shutting down", agent.name, run_input.run_id)
        yield _failed(trace, tally, SHUTTING_DOWN, "server_shutdown")
    except PromptLeak:  # logged by the guard, with its position and length only
        yield _failed(trace, tally, PROMPT_LEAK_MESSAGE, "prompt_leak")
    except ProviderError as exc:
        logger.error("agent %r run %r: model call failed: %s", agent.name, run_input.run_id, exc)
        # Interrupted: the upstream broke off after it had said something (what it said stands).
        yield _failed(trace, tally, exc.public_message, exc.code, interrupted=streamed and exc.kind == "interrupted")
    except RunError as exc:
        yield _failed(trace, tally, str(exc), "run_error")
    except ToolsUnavailable as exc:
        logger.warning("agent %r run %r: %s", agent.name, run_input.run_id, exc.public_message)
        yield _failed(trace, tally, exc.public_message, exc.code)
    except BudgetExceeded as exc:
        logger.info("agent %r run %r: %s", agent.name, run_input.run_id, exc.message)
        yield _failed(trace, tally, exc.message, "budget_exceeded")
    except RequestError as exc:  # the budgets could not be checked
        yield _failed(trace, tally, exc.message, exc.code)
    except StoreUnavailable as exc:  # a stored thread's approval ledger: the store is down or locked
        logger.warning("agent %r run %r: %s", agent.name, run_input.run_id, exc)
        yield _failed(trace, tally, exc.public_message, exc.code)
    except Exception:
        logger.exception("agent %r run %r: unexpected failure", agent.name, run_input.run_id)
        yield _failed(trace, tally, "An internal error occurred.", "internal_error")
    finally:
        if account is not None:
            account.finish()  # a run that did not reach RunFinished is recorded too
        if trace is not None:
            trace.close()  # cut off (client gone, stopped): ended as cancelled


def _may_trim_further(budget: ContextBudget | None, view: ContextView | None, exc: BaseException) -> bool:
    """Whether a failed call is a length refusal a shorter view might avoid (once, before any event)."""
    return (
        budget is not None
        and view is not None
        and budget.strategy != "fail"
        and budget.window is not None
        and isinstance(exc, ProviderError)
        and exc.code == CONTEXT_LENGTH_EXCEEDED
    )


def _dropped(
    agent: Agent, budget: ContextBudget, run_input: RunInput, view: ContextView, total: int, metrics: Metrics | None
) -> None:
    """Log (counts, never content) and count the turns left out of this call's view."""
    logger.info(
        "agent %r run %r: context window %s tokens (%s): model sees %d of %d messages (%d summarized),"
        " %d turns left out; about %d prompt tokens",
        agent.name,
        run_input.run_id,
        budget.window,
        budget.strategy,
        total - view.dropped_messages,
        total,
        view.summarized,
        view.dropped_turns,
        view.tokens,
    )
    if metrics is not None:
        metrics.count_dropped_turns(agent.name, budget.strategy, view.dropped_turns)


async def _summarize(
    agent: Agent,
    budget: ContextBudget,
    summaries: SummaryKeeper,
    run_input: RunInput,
    view: ContextView,
    history: list[Message],
    metrics: Metrics | None,
    account: RunAccount | None,
    tally: UsageTally,
) -> tuple[ContextSummary | None, Usage | None]:
    """Have the summary model fold ``view``'s turns into the thread's summary, and the call's usage.

    One model call, metered and counted in the run's usage like any other; the summary is stored at
    once. A failed call (None, logged) leaves this call's view as ``drop_oldest`` made it.
    """
    writer = agent.summary_model
    through = history[view.fold_to - 1].id
    if writer is None or not through:  # no writer, or nothing to name what it covers by
        return None, None
    previous = summaries.current
    folded = history[view.fold_from : view.fold_to]
    if account is not None:
        await account.check()  # over budget: the run ends here, before the call
    meter = metrics.model_call(writer.provider.name, agent.name) if metrics is not None else None
    usage: Usage | None = None
    failure: BaseException | None = None
    try:
        summary, usage = await write_summary(
            writer,
            previous,
            folded,
            through=through,
            covered=summaries.covered(through),
            max_tokens=budget.summary_tokens,
            max_chars=budget.summary_room(previous),
        )
    except BaseException as exc:
        failure = exc
        if not isinstance(exc, Exception):
            raise
        # Any failure: this call goes on without a new summary.
        logger.warning(
            "agent %r run %r: the summary of %d messages could not be written, leaving turns out instead: %s",
            agent.name,
            run_input.run_id,
            len(folded),
            exc,
        )
        if metrics is not None:
            metrics.count_summary(agent.name, budget.strategy, "failed")
        return None, None
    finally:
        if meter is not None:
            meter.ended(None, usage, failure)  # not streamed to anyone: no time to first token
        if account is not None:
            account.add(usage)
        tally.add(writer.provider.name, writer.model, usage)
    stored = await summaries.save(summary)
    logger.info(
        "agent %r run %r: summarized %d messages (%d covered in all) into about %d tokens%s",
        agent.name,
        run_input.run_id,
        len(folded),
        summary.messages,
        summary.tokens,
        "" if stored else ", not stored",
    )
    if metrics is not None:
        metrics.count_summary(agent.name, budget.strategy, "written")
    return summary, usage


async def _finished(
    trace: RunTrace | None,
    reason: FinishReason,
    account: RunAccount | None,
    tally: UsageTally,
    pending: tuple[str, ...] = (),
) -> RunFinished:
    cost_usd = await account.close() if account is not None else None
    if trace is not None:
        trace.finished(reason)
    return RunFinished(reason, cost_usd=cost_usd, usage=tally.entries(), pending_tool_call_ids=pending)


def _failed(
    trace: RunTrace | None, tally: UsageTally, message: str, code: str, *, interrupted: bool = False
) -> RunFailed:
    if trace is not None:
        trace.failed(code, message)
    return RunFailed(message, code=code, usage=tally.entries(), interrupted=interrupted)


class RunError(ChatgateError):
    """A run cannot go on; the message is safe for the client and the detail is already logged."""


class ServerStopping(ChatgateError):
    """The server is shutting down: the run ends now, in protocol."""


def _unguarded(event: RunEvent) -> RunEvent | None:
    """The filter of a run without a leak guard (never called: the runner checks for a guard first)."""
    return event


_OWN_ENDINGS = (ServerStopping, PromptLeak)
"""Endings of a model call that are the run's own, not a failure of the call (the guard releases nothing)."""


async def _settle_pending_calls(
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
    task = asyncio.ensure_future(_run_and_record(agent, call, approval, claim, trace, span))
    _answering.add(task)
    task.add_done_callback(_answering.discard)
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

"""One run: the model request, model calls and server tool steps, and one terminal event.

A run is a loop of model calls ("steps"), told in ``run_agent``: the model request and its leak guard
(model_request.py); the calls the history left unanswered settled (dispatch.py); then, per step, the
model's view of the history (model_view.py), one model call opened and ended once (model_call.py) with
its stream read here token by token, and the outcome of every tool call the step completed
(dispatch.py); the one terminal event last (endings.py).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Iterator
from typing import TYPE_CHECKING

from chatgate.context import SummaryKeeper
from chatgate.events import (
    ModelFinished,
    RunEvent,
    StepFinished,
    StepRetracted,
    StepStarted,
    TextDelta,
    ToolCallEnd,
    Usage,
)
from chatgate.run.agents import Agent
from chatgate.run.dispatch import (
    ALREADY_ANSWERING,
    APPROVALS_UNAVAILABLE,
    CUT_OFF,
    NOT_RUN,
    StepTools,
    settle_pending_calls,
    tool_message,
)
from chatgate.run.endings import SHUTTING_DOWN, RunEnding, RunError, ServerStopping, max_steps_notice
from chatgate.run.failover import FAILOVER, Failover
from chatgate.run.model_call import ModelCalls
from chatgate.run.model_request import build_model_request, guarded_request
from chatgate.run.model_view import ModelView
from chatgate.run_input import RunInput
from chatgate.telemetry import Metrics
from chatgate.usage import RunAccount

if TYPE_CHECKING:
    from chatgate.tracing import RunTrace

__all__ = [
    "ALREADY_ANSWERING",
    "APPROVALS_UNAVAILABLE",
    "CUT_OFF",
    "NOT_RUN",
    "SHUTTING_DOWN",
    "RunError",
    "ServerStopping",
    "build_model_request",
    "run_agent",
    "tool_message",
]


async def run_agent(
    agent: Agent,
    run_input: RunInput,
    *,
    stopping: asyncio.Event | None = None,
    metrics: Metrics | None = None,
    account: RunAccount | None = None,
    trace: RunTrace | None = None,
    summaries: SummaryKeeper | None = None,
    retracts: bool = False,
) -> AsyncIterator[RunEvent]:
    """Run ``agent`` on ``run_input``; the last event is always ``RunFinished`` or ``RunFailed``.

    Failures are logged with their detail and reach the client only as a short message. Once
    ``stopping`` is set (the server is shutting down) the run ends at its next model event with a
    ``RunFailed`` the client can act on, instead of being cut off. ``metrics`` records each model call;
    ``account`` checks budgets before each one and records the run's usage (app/usage/).
    ``trace`` (tracing on) gets a span per model call, tool call and approval, and is ended here.
    ``summaries`` is a stored thread's summary under ``strategy = "summarize"``: without it (a stateless
    agent) a prompt over the budget leaves turns out as ``drop_oldest`` does. ``retracts``: the client can
    drop a step it was shown (``StepRetracted``), so a model that fails mid-answer is failed over too: the
    step starts again on the chain's next model; without it only a failure before any event fails over.
    """
    # One generator, not a wrapper turning a second one's exceptions into RunFailed: every token
    # passes through here, and each generator it passes through costs CPU (docs/performance.md).
    is_stopping = (stopping or asyncio.Event()).is_set
    calls = ModelCalls(agent, metrics, account, trace)
    prompt = agent.prompt_facts
    ending = RunEnding(agent.name, run_input.run_id, calls.tally, account, trace, prompt)
    if account is not None:
        account.noted(prompt.version, prompt.variant, trace.ids if trace is not None else None)
    if trace is not None:
        trace.prompt_used(prompt.version, prompt.hash, prompt.variant)
    streamed = False  # some model call sent something: a break-off then leaves a partial answer
    streamed_before = False  # ... before the current step (what a retraction leaves standing)
    try:
        request, guard = await guarded_request(agent, run_input, metrics, trace)
        history = list(request.messages)
        ran = len(history)  # the run's own messages (settled calls, earlier steps) follow
        if agent.server_tools:
            async for event in settle_pending_calls(agent, run_input, history, trace):
                yield event
        view = await ModelView(agent, run_input, calls, metrics, summaries).ready()
        chain = Failover(agent.name, agent.chain, agent.health, metrics, agent.weights)
        await chain.start()
        steps = _Steps(agent.max_steps)
        for step in steps:
            name = f"model-call-{step}"
            if not steps.repeated:
                streamed_before = streamed
                yield StepStarted(name)
            messages, spent = await view.messages(history, request.tools, steps.limit)
            if spent is not None:
                yield spent  # the run's usage on the stream includes the summary's
            entry = chain.entry
            call = await calls.open(request, messages, step, entry, chain.reason)
            transcript, first_event_at = call.transcript, None
            guard_filter = guard.filter if guard is not None else _unguarded  # looked up once, not per event
            try:
                async for event in call.stream:
                    if is_stopping():
                        raise ServerStopping
                    if first_event_at is None and type(event) is not Usage:  # a failing call's bill shows nothing
                        first_event_at = time.perf_counter()
                        streamed = True
                    if guard is not None:  # a plain call: a generator between would cost every token
                        shown = guard_filter(event)
                        if guard.released:  # the rest of a stream that ends, before ``shown``
                            for delta in call.released(guard):
                                yield delta
                        if shown is None:
                            continue
                        event = shown
                    if type(event) is not TextDelta:  # nearly every event is one: one check for it
                        if type(event) is ModelFinished:
                            call.finished = event
                            continue
                        if type(event) is Usage:
                            call.usage = event
                        elif type(event) is ToolCallEnd:
                            call.completed(event)
                    if transcript is not None:
                        transcript.feed(event)
                    yield event
            except BaseException as exc:
                visible = first_event_at is not None
                if (not visible or retracts) and await chain.next(exc):  # the same step on the chain's next model
                    call.failure = exc
                    if visible:  # what the step showed is withdrawn first (held-back text included)
                        yield StepRetracted(name, FAILOVER, entry.model, chain.reason or "", tuple(history[ran:]))
                        if guard is not None:
                            guard.retract(history)
                        streamed = streamed_before
                    steps.once_more()
                    continue
                for delta in call.failed(exc, guard):  # what the guard released before, or held back
                    yield delta
                if visible:
                    raise
                if not steps.again(view.shorter(exc)):
                    raise
                continue  # a length refusal: the step once more, on a shorter view
            finally:
                await call.close(first_event_at)
            view.observe(history, call.usage)
            reason = call.finish_reason()
            yield StepFinished(name, reason)
            tools = StepTools(agent, history, trace)
            async for event in tools.dispatch(call, reason):
                yield event
            if tools.ends_run:
                yield await ending.finished(reason, tools.pending)
                return
        for event in max_steps_notice(agent.name, run_input.run_id, agent.max_steps):
            yield event
        yield await ending.finished("other")
    except Exception as exc:
        yield ending.failed(exc, streamed=streamed)
    finally:
        ending.close()


def _unguarded(event: RunEvent) -> RunEvent | None:
    """The filter of a run without a leak guard (never called: the runner checks for a guard first)."""
    return event


class _Steps:
    """The run's steps, 1 to ``max_steps``; after ``again`` the same step once more (a shorter view, another model)."""

    __slots__ = ("_again", "_most", "limit", "repeated", "step")

    def __init__(self, most: int) -> None:
        self._most, self.step, self._again = most, 0, False
        self.limit: int | None = None
        """The shorter view's budget (tokens) of a step tried again after a length refusal; None otherwise."""
        self.repeated = False
        """The step is being tried again (its ``StepStarted`` was sent)."""

    def __iter__(self) -> Iterator[int]:
        while self._again or self.step < self._most:
            self.repeated = self._again
            if not self._again:
                self.step, self.limit = self.step + 1, None
            self._again = False
            yield self.step

    def again(self, limit: int | None) -> bool:
        """Try the step once more within ``limit`` prompt tokens (None: no retry)."""
        if limit is None:
            return False
        self.limit, self._again = limit, True
        return True

    def once_more(self) -> None:
        """Try the step again as it was (on the fallback chain's next model)."""
        self._again = True

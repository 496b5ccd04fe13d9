"""One model call of a run, opened and ended once: its meter, the run's account and tally, its span and transcript.

The runner reads the call's ``stream`` itself, token by token (no layer between the provider and the
run: each costs every token); what happens once per call is here. Every call, a summary's too, is
checked against the run's budgets before it is made and recorded in the account and the tally after.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from dataclasses import replace
from typing import TYPE_CHECKING, Protocol

from chatgate.errors import ProviderError
from chatgate.events import FinishReason, ModelFinished, RunEvent, ToolCallEnd, Usage, UsageTally
from chatgate.history import Message, complete_arguments
from chatgate.ids import new_id
from chatgate.leak_guard import LeakGuard
from chatgate.providers import ModelRequest
from chatgate.run.agents import Agent
from chatgate.run.assembly import MessageAssembler
from chatgate.run.endings import OWN_ENDINGS
from chatgate.run.failover import ChainEntry
from chatgate.telemetry import Metrics
from chatgate.usage import RunAccount

if TYPE_CHECKING:
    from chatgate.tracing import ModelCallTrace, RunTrace

__all__ = ["ModelCall", "ModelCalls"]


class CallMeter(Protocol):
    """A model call's meter (``Metrics.model_call``)."""

    def ended(
        self, first_event_at: float | None, usage: Usage | None = None, error: BaseException | None = None
    ) -> None:
        """The call is over."""


class ModelCalls:
    """What every model call of one run is checked against and recorded in."""

    __slots__ = ("_account", "_agent", "_metrics", "_trace", "tally")

    def __init__(self, agent: Agent, metrics: Metrics | None, account: RunAccount | None, trace: RunTrace | None):
        self._agent, self._metrics, self._account, self._trace = agent, metrics, account, trace
        self.tally = UsageTally()
        """What the run's ending reports, in both protocols."""

    async def start(self, provider: str) -> CallMeter | None:
        """Before a call to ``provider``: the run's budgets checked (``BudgetExceeded`` ends the run), its meter."""
        if self._account is not None:
            await self._account.check()
        return self._metrics.model_call(provider, self._agent.name) if self._metrics is not None else None

    def record(
        self,
        meter: CallMeter | None,
        model: tuple[str, str],
        usage: Usage | None,
        failure: BaseException | None,
        first_event_at: float | None = None,
    ) -> None:
        """After a call to ``model`` (provider, model): its meter ended, its usage in the account and tally."""
        if meter is not None:
            meter.ended(first_event_at, usage, failure)
        if self._account is not None:
            self._account.add(usage)
        self.tally.add(*model, usage)

    async def open(
        self,
        request: ModelRequest,
        messages: tuple[Message, ...],
        step: int,
        entry: ChainEntry | None = None,
        failover: str | None = None,
    ) -> ModelCall:
        """Start the model call of ``step`` on ``messages`` (``request``'s history as this call sees it).

        ``entry`` is the model of the agent's chain it calls (its first by default); ``failover`` why the
        step moved to it, for the call's span.
        """
        agent = self._agent
        if entry is None:
            entry = agent.chain[0]
        elif entry is not agent.chain[0]:
            request = replace(request, model=entry.model_name, settings=entry.settings)
        meter = await self.start(entry.provider_name)
        answer = MessageAssembler(new_id("msg")) if agent.server_tools else None
        span: ModelCallTrace | None = None
        transcript = answer  # what a captured span records as the answer
        if self._trace is not None:
            span = self._trace.model_call(replace(request, messages=messages), step, entry.provider_name, failover)
            if transcript is None and self._trace.capture_content:
                transcript = MessageAssembler(new_id("msg"))
        if agent.files is not None:  # uploads' references become bytes in this call only
            messages = await agent.files.inline(messages)
        stream = entry.provider.stream(replace(request, messages=messages))
        return ModelCall(self, (entry.provider_name, entry.model_name), stream, meter, span, answer, transcript)


class ModelCall:
    """One model call: the provider's ``stream``, and what the runner notes of it besides each token."""

    __slots__ = (
        "_calls",
        "_meter",
        "_model",
        "_span",
        "answer",
        "called",
        "cut_off",
        "failure",
        "finished",
        "stream",
        "transcript",
        "usage",
    )

    def __init__(
        self,
        calls: ModelCalls,
        model: tuple[str, str],
        stream: AsyncIterator[RunEvent],
        meter: CallMeter | None,
        span: ModelCallTrace | None,
        answer: MessageAssembler | None,
        transcript: MessageAssembler | None,
    ) -> None:
        self._calls, self._model, self._meter, self._span = calls, model, meter, span
        self.stream = stream
        self.answer = answer
        """The assistant message, assembled when the agent has server tools to run after the step."""
        self.transcript = transcript
        """What every event is fed to: ``answer``, or the captured span's own."""
        self.usage: Usage | None = None
        self.finished: ModelFinished | None = None
        self.cut_off: list[str] = []
        """Calls whose arguments are not a JSON object."""
        self.called: list[str] = []
        """Every call the model completed in this step."""
        self.failure: BaseException | None = None

    def completed(self, event: ToolCallEnd) -> None:
        """The model completed a tool call (cut off when its arguments are not a JSON object)."""
        self.called.append(event.tool_call_id)
        if not complete_arguments(event.arguments):
            self.cut_off.append(event.tool_call_id)

    def released(self, guard: LeakGuard) -> list[RunEvent]:
        """The deltas the guard released before its last event, fed to the transcript, to send now."""
        return self._fed(guard.take_released())

    def failed(self, failure: BaseException, guard: LeakGuard | None) -> list[RunEvent]:
        """The call ends in ``failure``: the deltas still to send, fed to the transcript.

        They are what the guard released before it raised, then, when the model call itself failed,
        what the guard held back (it is not lost).
        """
        self.failure = failure
        if guard is None or not isinstance(failure, Exception):
            return []
        released = guard.take_released()
        if not isinstance(failure, OWN_ENDINGS):
            released += guard.flush()
        return self._fed(released)

    def finish_reason(self) -> FinishReason:
        """Why the model finished; a stream that ended without saying is a broken-off call."""
        if self.finished is None:
            raise ProviderError(
                "the model stream ended without finishing",
                public_message="The model stream ended early.",
                kind="interrupted",
            )
        return self.finished.reason

    async def close(self, first_event_at: float | None) -> None:
        """End the call: the upstream closed, the meter, account, tally and span recorded once."""
        # Close the upstream now, not whenever the generator is collected: on a hang-up, a shutdown or
        # a failure, nobody should go on paying for tokens.
        aclose = getattr(self.stream, "aclose", None)
        if aclose is not None:
            await aclose()
        failure = self.failure
        if isinstance(failure, OWN_ENDINGS):
            failure = asyncio.CancelledError()
        self._calls.record(self._meter, self._model, self.usage, failure, first_event_at)
        if self._span is not None:
            transcript = self.transcript
            output = transcript.message() if transcript is not None and self._span.capture_content else None
            self._span.ended(self.finished, self.usage, failure, output)

    def _fed(self, deltas: list[RunEvent]) -> list[RunEvent]:
        if self.transcript is not None:
            for delta in deltas:
                self.transcript.feed(delta)
        return deltas

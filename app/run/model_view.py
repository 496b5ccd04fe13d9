"""The model's view of a run's history: which messages each model call sees (docs/architecture.md).

Without a context budget the history goes as it is, roles made to alternate. With one (app/context/)
whole older turns are left out until the prompt fits; under ``strategy = "summarize"`` a stored
thread's summary stands in for them, and a new one is written (one model call, metered and counted like
any other) when the view runs over. After a length refusal the view is made shorter once.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

from chatgate.context import (
    CONTEXT_LENGTH_EXCEEDED,
    ContextBudget,
    ContextSummary,
    ContextView,
    SummaryKeeper,
    alternate_roles,
    write_summary,
)
from chatgate.errors import ProviderError
from chatgate.events import Usage
from chatgate.history import Message
from chatgate.run.agents import Agent
from chatgate.run.model_call import ModelCalls
from chatgate.run_input import RunInput, ToolDefinition
from chatgate.telemetry import Metrics

__all__ = ["ModelView"]

logger = logging.getLogger("chatgate.runner")


class ModelView:
    """The messages each model call of one run sees, after the system-prompt policy and the prompt."""

    __slots__ = ("_agent", "_budget", "_calls", "_metrics", "_run_id", "_shortened", "_summaries", "_thread", "_view")

    def __init__(
        self,
        agent: Agent,
        run_input: RunInput,
        calls: ModelCalls,
        metrics: Metrics | None,
        summaries: SummaryKeeper | None,
    ) -> None:
        """``summaries`` is a stored thread's summary under ``summarize``; without it turns are left out."""
        self._agent, self._budget, self._calls, self._metrics = agent, agent.context, calls, metrics
        self._run_id, self._thread, self._summaries = run_input.run_id, run_input.thread_id or "", summaries
        self._view: ContextView | None = None
        self._shortened = False

    async def ready(self) -> ModelView:
        """Wait for the budget's window when the upstream is asked for it (``window = "auto"``); the view."""
        if self._budget is not None and self._budget.waiting_for_window:
            await self._budget.find_window()
        return self

    async def messages(
        self, history: Sequence[Message], tools: Sequence[ToolDefinition], limit: int | None
    ) -> tuple[tuple[Message, ...], Usage | None]:
        """What the next call sends, and the usage of a summary written for it (the run's usage includes it).

        ``limit`` (tokens) is a retry's shorter budget; a retry writes no summary.
        """
        budget, summaries = self._budget, self._summaries
        self._shortened = limit is not None
        if budget is None:
            self._view = None
            return alternate_roles(history), None
        summary = summaries.current if summaries is not None else None
        fold = summaries is not None and limit is None
        view = budget.view(history, tools, self._thread, limit=limit, summary=summary, fold=fold)
        spent: Usage | None = None
        if view.fold_to and summaries is not None:
            written, spent = await self._summarize(budget, summaries, view, history)
            if written is not None:
                view = budget.view(history, tools, self._thread, summary=written)
        if view.dropped_turns:
            self._dropped(budget, view, len(history))
        self._view = view
        return view.messages, spent

    def shorter(self, exc: BaseException) -> int | None:
        """After ``exc`` ended a call before any event: a shorter budget to try once, if it was a length refusal.

        None when it was not, or the view was shortened already.
        """
        budget, view = self._budget, self._view
        if (
            self._shortened
            or budget is None
            or view is None
            or budget.strategy == "fail"
            or budget.window is None
            or not isinstance(exc, ProviderError)
            or exc.code != CONTEXT_LENGTH_EXCEEDED
        ):
            return None
        logger.warning(
            "agent %r run %r: the model refused about %d prompt tokens for length; trimming further",
            self._agent.name,
            self._run_id,
            view.tokens,
        )
        budget.refused(self._thread)
        return max(1, view.tokens * 3 // 4)

    def observe(self, history: Sequence[Message], usage: Usage | None) -> None:
        """Learn from the input tokens the upstream reported for the last call's view."""
        if self._budget is not None and self._view is not None and usage is not None:
            self._budget.observe(self._view, history, self._thread, usage.input_tokens)

    def _dropped(self, budget: ContextBudget, view: ContextView, total: int) -> None:
        """Log (counts, never content) and count the turns left out of this call's view."""
        logger.info(
            "agent %r run %r: context window %s tokens (%s): model sees %d of %d messages (%d summarized),"
            " %d turns left out; about %d prompt tokens",
            self._agent.name,
            self._run_id,
            budget.window,
            budget.strategy,
            total - view.dropped_messages,
            total,
            view.summarized,
            view.dropped_turns,
            view.tokens,
        )
        if self._metrics is not None:
            self._metrics.count_dropped_turns(self._agent.name, budget.strategy, view.dropped_turns)

    async def _summarize(
        self, budget: ContextBudget, summaries: SummaryKeeper, view: ContextView, history: Sequence[Message]
    ) -> tuple[ContextSummary | None, Usage | None]:
        """Have the summary model fold ``view``'s turns into the thread's summary, and the call's usage.

        The summary is stored at once. A failed call (None, logged) leaves this call's view as
        ``drop_oldest`` made it.
        """
        agent, writer = self._agent, self._agent.summary_model
        through = history[view.fold_to - 1].id
        if writer is None or not through:  # no writer, or nothing to name what it covers by
            return None, None
        previous = summaries.current
        folded = history[view.fold_from : view.fold_to]
        meter = await self._calls.start(writer.provider.name)
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
        except Exception as exc:  # any failure: this call goes on without a new summary
            failure = exc
            logger.warning(
                "agent %r run %r: the summary of %d messages could not be written, leaving turns out instead: %s",
                agent.name,
                self._run_id,
                len(folded),
                exc,
            )
            self._counted("failed")
            return None, None
        except BaseException as exc:
            failure = exc
            raise
        finally:  # not streamed to anyone: no time to first token
            self._calls.record(meter, (writer.provider.name, writer.model), usage, failure)
        stored = await summaries.save(summary)
        logger.info(
            "agent %r run %r: summarized %d messages (%d covered in all) into about %d tokens%s",
            agent.name,
            self._run_id,
            len(folded),
            summary.messages,
            summary.tokens,
            "" if stored else ", not stored",
        )
        self._counted("written")
        return summary, usage

    def _counted(self, outcome: str) -> None:
        if self._metrics is not None and self._budget is not None:
            self._metrics.count_summary(self._agent.name, self._budget.strategy, outcome)

"""An agent's context budget: which messages of a thread the model sees on this call.

The prompt budget is the window minus the answer's tokens (``model_settings.max_tokens``, or its
kind's equivalent; without one, a quarter of the window). When the counted prompt
(app/context/counting.py) is over it:

- ``drop_oldest`` keeps the system messages at the head and the newest turn (from the newest user
  message on), and leaves out whole turns, oldest first, until the rest fits. A turn runs from one
  user message to the next, so a tool call is never separated from its result, nor an approval from
  its call;
- ``summarize`` sends the thread's summary (app/context/summary.py) in place of the messages it
  covers, and when even that is over, says which turns a new summary should fold in (the runner has
  it written, summary_writer.py); until then, and when no summary can be written, it leaves turns out as
  ``drop_oldest`` does;
- ``fail`` ends the run with ``context_length_exceeded`` before calling the model.

If even the newest turn does not fit, it is sent anyway (the count is an estimate) and the upstream
decides. Nothing here deletes anything: the store keeps the whole thread, and only this call's view is
shorter. Roles are made to alternate last (app/context/roles.py), on what is actually sent.
"""

from __future__ import annotations

import asyncio
import logging
import math
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Literal, TypeAlias

from chatgate.context.counting import Anchor, TokenCounter
from chatgate.context.roles import alternate_roles
from chatgate.context.summary import ContextSummary, summary_prompt
from chatgate.history import Message, SystemMessage, UserMessage
from chatgate.providers import context_full
from chatgate.run_input import ToolDefinition
from chatgate.token_estimates import estimate, estimate_tools

__all__ = ["ContextBudget", "ContextView", "Strategy", "WindowProbe"]

logger = logging.getLogger("chatgate.context")

Strategy: TypeAlias = Literal["drop_oldest", "summarize", "fail"]
WindowProbe: TypeAlias = Callable[[], Awaitable[int | None]]
"""Asks the upstream for its context window (``window = "auto"``); None when it cannot tell."""

MAX_SUMMARY_TOKENS = 1024
"""The longest summary ``summarize`` asks for, whatever the window."""

PROBE_AGAIN_SECONDS = 30.0
"""After a failed probe, how long runs go without a budget before the upstream is asked again."""


@dataclass(frozen=True, slots=True)
class ContextView:
    """What the model sees on one call, and how it was counted.

    ``start`` is the index in the history of the first message after the head that is sent;
    ``tokens`` the counted prompt (0 with no budget); ``known`` of them were reported by the previous
    call and ``estimated`` is the raw estimate of the rest (0 when this call dropped turns: nothing to
    learn from). ``dropped_turns`` and ``dropped_messages`` are what this call leaves out in all (of which
    ``summarized`` messages are covered by ``summary``, sent in their place). ``fold_from``..``fold_to``
    (both 0: none) are the messages a new summary should fold in.
    """

    messages: tuple[Message, ...]
    start: int = 0
    end: int = 0
    tokens: int = 0
    known: int = 0
    estimated: int = 0
    dropped_turns: int = 0
    dropped_messages: int = 0
    summary: ContextSummary | None = None
    summarized: int = 0
    fold_from: int = 0
    fold_to: int = 0


class ContextBudget:
    """One agent's context window and strategy, and what it has learned about counting its tokens."""

    def __init__(
        self,
        agent: str,
        *,
        window: int | None,
        strategy: Strategy = "drop_oldest",
        answer: int | None = None,
        probe: WindowProbe | None = None,
    ) -> None:
        self.agent = agent
        self.window = window
        self.strategy = strategy
        self.counter = TokenCounter()
        self._answer = answer
        self._probe = probe
        self._probed_at = -math.inf
        self._asking: asyncio.Future[None] | None = None

    @property
    def waiting_for_window(self) -> bool:
        """True while ``window = "auto"`` has no answer yet."""
        return self.window is None and self._probe is not None

    @property
    def prompt_budget(self) -> int | None:
        """Tokens the prompt may take: the window minus the answer's; None with no window."""
        if self.window is None:
            return None
        answer = self._answer if self._answer is not None else self.window // 4
        return max(self.window - answer, 1)

    async def find_window(self) -> None:
        """Ask the upstream for its window (``"auto"``); while it cannot tell, once per ``PROBE_AGAIN_SECONDS``.

        Runs starting while the question is out wait for the same answer.
        """
        if self._probe is None or self.window is not None:
            return
        if self._asking is not None:
            await asyncio.shield(self._asking)
            return
        now = time.monotonic()
        if now - self._probed_at < PROBE_AGAIN_SECONDS:
            return
        self._probed_at = now
        asking = self._asking = asyncio.ensure_future(self._ask(self._probe))
        asking.add_done_callback(self._asked)
        await asyncio.shield(asking)

    def _asked(self, asking: asyncio.Future[None]) -> None:
        if self._asking is asking:
            self._asking = None

    async def _ask(self, probe: WindowProbe) -> None:
        try:
            window = await probe()
        except Exception as exc:  # any failure: this run goes without a budget, a later one asks again
            logger.warning("agent %r: could not ask the model server for its context window: %r", self.agent, exc)
            return
        if window is None or window <= 0:
            logger.warning("agent %r: the model server did not say its context window; no budget applies", self.agent)
            return
        self.window = window
        logger.info("agent %r: context window %d tokens, from the model server", self.agent, window)

    @property
    def summary_tokens(self) -> int:
        """Under ``summarize``: the most a summary may take (its call's answer limit).

        An eighth of the prompt budget, 16 to ``MAX_SUMMARY_TOKENS``.
        """
        budget = self.prompt_budget or 0
        return min(max(budget // 8, 16), MAX_SUMMARY_TOKENS)

    def summary_room(self, previous: ContextSummary | None) -> int:
        """Characters of transcript a summary call may send and still fit the window with its answer."""
        window = self.window or 0
        fixed = sum(estimate(message) for message in summary_prompt(previous, (), 0))
        room = window - self.summary_tokens - math.ceil(fixed * self.counter.ratio) - 8
        return max(int(room * 4 / self.counter.ratio), 0)

    def view(
        self,
        history: Sequence[Message],
        tools: Sequence[ToolDefinition],
        thread: str,
        *,
        limit: int | None = None,
        summary: ContextSummary | None = None,
        fold: bool = False,
    ) -> ContextView:
        """The messages the model sees for ``history`` on this call; ``limit`` tightens the budget (a retry).

        ``summary`` (``summarize``) stands in for the messages it covers, right after the head. With
        ``fold``, a view over the budget also says which messages a new summary should fold in
        (``fold_from``..``fold_to``: what leaves the rest, with the new summary, at about half the
        budget, so that the next turns fit without another summary); its messages are what
        ``drop_oldest`` would send, the fallback when no summary can be written.

        Raises the ``context_length_exceeded`` error when the strategy is ``fail`` and the prompt does
        not fit.
        """
        budget = self.prompt_budget
        n = len(history)
        if budget is None or not n:
            return ContextView(alternate_roles(history), end=n)
        if limit is not None:
            budget = min(budget, limit)
        head = 0
        while head < n and type(history[head]) is SystemMessage:
            head += 1
        counter = self.counter
        ratio = counter.ratio
        key = summary.through if summary is not None else ""
        anchor = counter.anchor(thread)
        if anchor is not None and anchor.summary == key and _still_holds(anchor, history, head):
            start, known, new_from, turns = anchor.start, anchor.tokens, anchor.end, anchor.left_out
            estimated = 0
            # The summary is the one that call sent, so it covers messages before ``start``.
            floor = head if summary is None else (_after(history, head, key, start) or start)
        else:
            found = head if summary is None else _after(history, head, key, n)
            if found is None:  # the summary no longer matches this history (a regenerate): not used
                summary, key = None, ""
            floor = found or head
            start, known, new_from, turns = floor, 0, floor, 0
            estimated = estimate_tools(tools) if tools else 0
            for message in history[:head]:
                estimated += estimate(message)
            if summary is not None:
                estimated += estimate(summary.pair[0]) + estimate(summary.pair[1])
        for message in history[new_from:]:
            estimated += estimate(message)
        tokens = known + math.ceil(estimated * ratio)
        carried = summary.pair if summary is not None else ()
        covered = floor - head
        if tokens <= budget:
            if start == head and summary is None:
                messages: Sequence[Message] = history
            else:
                messages = (*history[:head], *carried, *history[start:])
            return ContextView(
                alternate_roles(messages), start, n, tokens, known, estimated, turns, start - head, summary, covered
            )
        if self.strategy == "fail":
            raise context_full(f"agent {self.agent!r}: about {tokens} prompt tokens, over the budget of {budget}")
        newest = n - 1
        while newest > start and type(history[newest]) is not UserMessage:
            newest -= 1
        kept, tokens, left_out = _leave_out(history, start, newest, tokens, budget, ratio)
        fold_from = fold_to = 0
        if fold and self.strategy == "summarize":
            carried_tokens = math.ceil(sum(estimate(message) for message in carried) * ratio)
            # Down to half the budget with the new summary, so that the next turns fit without another.
            target = max(budget // 2 - self.summary_tokens, 0)
            fold_to = _leave_out(history, kept, newest, tokens - carried_tokens, target, ratio)[0]
            fold_from = floor
            if fold_to <= fold_from:
                fold_from = fold_to = 0
        messages = (*history[:head], *carried, *history[kept:])
        return ContextView(
            alternate_roles(messages),
            kept,
            n,
            max(tokens, 0),
            0,
            0,
            turns + left_out,
            kept - head,
            summary,
            covered,
            fold_from,
            fold_to,
        )

    def observe(self, view: ContextView, history: Sequence[Message], thread: str, input_tokens: int) -> None:
        """The call made with ``view`` reported ``input_tokens``: the count for this thread's next call."""
        if self.window is None or view.end == 0 or input_tokens <= 0:
            return
        start_id = history[view.start].id if view.start < len(history) else ""
        end_id = history[view.end - 1].id
        key = view.summary.through if view.summary is not None else ""
        anchor = Anchor(view.start, start_id, view.end, end_id, input_tokens, view.dropped_turns, key)
        self.counter.observe(thread, anchor, known=view.known, estimated=view.estimated)

    def refused(self, thread: str) -> None:
        """The upstream refused the prompt for length: count more cautiously and forget this thread's count."""
        self.counter.refused(thread)


def _leave_out(
    history: Sequence[Message], kept: int, newest: int, tokens: int, budget: int, ratio: float
) -> tuple[int, int, int]:
    """Leave out whole turns from ``kept`` on, never the newest: the new start, the tokens left, turns left out."""
    turns = 0
    while tokens > budget and kept < newest:
        end = kept + 1
        while end < newest and type(history[end]) is not UserMessage:
            end += 1
        tokens -= math.ceil(sum(estimate(message) for message in history[kept:end]) * ratio)
        turns += 1
        kept = end
    return kept, tokens, turns


def _after(history: Sequence[Message], head: int, message_id: str, stop: int) -> int | None:
    """The index after the message ``message_id`` (searched in ``history[head:stop]``), or None."""
    for index in range(head, min(stop, len(history))):
        if history[index].id == message_id:
            return index + 1
    return None


def _still_holds(anchor: Anchor, history: Sequence[Message], head: int) -> bool:
    """Whether the history still starts what the anchored call sent: same first and last message there."""
    start, end = anchor.start, anchor.end
    return (
        head <= start < end <= len(history)
        and bool(anchor.start_id)
        and bool(anchor.end_id)
        and history[start].id == anchor.start_id
        and history[end - 1].id == anchor.end_id
    )

"""An agent's context budget: which messages of a thread the model sees on this call.

The prompt budget is the window minus the answer's tokens (``model_settings.max_tokens``, or its
kind's equivalent; without one, a quarter of the window). When the counted prompt
(app/context/counting.py) is over it:

- ``drop_oldest`` keeps the system messages at the head and the newest turn (from the newest user
  message on), and leaves out whole turns, oldest first, until the rest fits. A turn runs from one
  user message to the next, so a tool call is never separated from its result, nor an approval from
  its call;
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

from chatgate.context.counting import Anchor, TokenCounter, estimate, estimate_tools
from chatgate.context.refusals import context_full
from chatgate.context.roles import alternate_roles
from chatgate.history import Message, SystemMessage, UserMessage
from chatgate.run_input import ToolDefinition

__all__ = ["ContextBudget", "ContextView", "Strategy", "WindowProbe"]

logger = logging.getLogger("chatgate.context")

Strategy: TypeAlias = Literal["drop_oldest", "summarize", "fail"]
WindowProbe: TypeAlias = Callable[[], Awaitable[int | None]]
"""Asks the upstream for its context window (``window = "auto"``); None when it cannot tell."""

PROBE_AGAIN_SECONDS = 30.0
"""After a failed probe, how long runs go without a budget before the upstream is asked again."""


@dataclass(frozen=True, slots=True)
class ContextView:
    """What the model sees on one call, and how it was counted.

    ``start`` is the index in the history of the first message after the head that is sent;
    ``tokens`` the counted prompt (0 with no budget); ``known`` of them were reported by the previous
    call and ``estimated`` is the raw estimate of the rest (0 when this call dropped turns: nothing to
    learn from). ``dropped_turns`` and ``dropped_messages`` are what this call leaves out in all.
    """

    messages: tuple[Message, ...]
    start: int = 0
    end: int = 0
    tokens: int = 0
    known: int = 0
    estimated: int = 0
    dropped_turns: int = 0
    dropped_messages: int = 0


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

    def view(
        self, history: Sequence[Message], tools: Sequence[ToolDefinition], thread: str, *, limit: int | None = None
    ) -> ContextView:
        """The messages the model sees for ``history`` on this call; ``limit`` tightens the budget (a retry).

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
        anchor = counter.anchor(thread)
        if anchor is not None and _still_holds(anchor, history, head):
            start, known, new_from, turns = anchor.start, anchor.tokens, anchor.end, anchor.left_out
            estimated = 0
        else:
            start, known, new_from, turns = head, 0, 0, 0
            estimated = estimate_tools(tools) if tools else 0
        for message in history[new_from:]:
            estimated += estimate(message)
        ratio = counter.ratio
        tokens = known + math.ceil(estimated * ratio)
        if tokens <= budget:
            messages = history if start == head else (*history[:head], *history[start:])
            return ContextView(alternate_roles(messages), start, n, tokens, known, estimated, turns, start - head)
        if self.strategy == "fail":
            raise context_full(f"agent {self.agent!r}: about {tokens} prompt tokens, over the budget of {budget}")
        newest = n - 1
        while newest > start and type(history[newest]) is not UserMessage:
            newest -= 1
        kept = start
        while tokens > budget and kept < newest:
            end = kept + 1
            while end < newest and type(history[end]) is not UserMessage:
                end += 1
            tokens -= math.ceil(sum(estimate(message) for message in history[kept:end]) * ratio)
            turns += 1
            kept = end
        messages = (*history[:head], *history[kept:])
        return ContextView(alternate_roles(messages), kept, n, max(tokens, 0), 0, 0, turns, kept - head)

    def observe(self, view: ContextView, history: Sequence[Message], thread: str, input_tokens: int) -> None:
        """The call made with ``view`` reported ``input_tokens``: the count for this thread's next call."""
        if self.window is None or view.end == 0 or input_tokens <= 0:
            return
        start_id = history[view.start].id if view.start < len(history) else ""
        end_id = history[view.end - 1].id
        anchor = Anchor(view.start, start_id, view.end, end_id, input_tokens, view.dropped_turns)
        self.counter.observe(thread, anchor, known=view.known, estimated=view.estimated)

    def refused(self, thread: str) -> None:
        """The upstream refused the prompt for length: count more cautiously and forget this thread's count."""
        self.counter.refused(thread)


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

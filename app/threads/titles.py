"""A stored thread's title, written once after its first answer by a side call that never sees the agent's prompt.

The call gets a fixed instruction and an excerpt of the first question and answer, nothing else: not the
operator's system prompt, not the thread's system message, not tools. Its answer is cleaned to one line
of at most ``MAX_TITLE_CHARS`` and stored only if the thread has no title yet (its owner may have named
it meanwhile). A reset clears the title, so the next answer writes a new one. The call is counted in
usage like a run (its own ledger row, against the same budgets); a failed or empty call leaves the
thread untitled with one warning, and the list goes on showing its first question.

The built-in echo model cannot write a title (it would repeat the instruction): its threads stay
untitled, and the list shows their first question.
"""

from __future__ import annotations

import asyncio
import logging
import re
from collections.abc import Callable, Coroutine
from dataclasses import dataclass
from functools import partial
from typing import Any

from chatgate.background import in_background
from chatgate.history import AssistantMessage, Message, SystemMessage, TextPart, UserMessage
from chatgate.providers import SideModel, side_answer
from chatgate.run import Agent
from chatgate.store import ThreadInfo, ThreadStore
from chatgate.threads.plan import ThreadPlan
from chatgate.usage import RunAccount

__all__ = ["MAX_TITLE_CHARS", "TITLE_INSTRUCTION", "ThreadTitler", "clean_title", "thread_titler", "title_prompt"]

logger = logging.getLogger("chatgate.titles")

TITLE_INSTRUCTION = (
    "You name conversations. Write a short title, at most six words, for the conversation below, in the"
    " language it is written in. Answer with the title alone: no quotes, no explanation."
)
"""The title call's only instruction: fixed, so no operator or client text can change what it is asked."""

MAX_TITLE_CHARS = 80
"""The longest title stored; a longer answer is cut at a word."""

TITLE_TOKENS = 24
"""The title call's answer limit."""

_EXCERPT_CHARS = 1500
_LABEL = re.compile(r"^\s*(?:title|titre|titel|título)\s*[:\uff1a-]\s*", re.IGNORECASE)
_WRAPPERS = "\"'`*#_\u201c\u201d\u2018\u2019«»\u300c\u300d \t"  # quotes, emphasis, heading marks


def title_prompt(question: str, answer: str) -> tuple[Message, ...]:
    """The title call's messages: the fixed instruction, then an excerpt of the first question and answer."""
    excerpt = f"Question: {question[:_EXCERPT_CHARS]}\n\nAnswer: {answer[:_EXCERPT_CHARS]}"
    return SystemMessage(TITLE_INSTRUCTION), UserMessage((TextPart(excerpt),))


def clean_title(text: str) -> str:
    """``text`` as a title: its first non-blank line, without a "Title:" label or quotes, cut at a word."""
    line = next((line for line in text.splitlines() if line.strip(_WRAPPERS)), "")
    line = " ".join(_LABEL.sub("", line.strip(_WRAPPERS)).split()).strip(_WRAPPERS).rstrip(".。")
    if len(line) <= MAX_TITLE_CHARS:
        return line
    cut = line[:MAX_TITLE_CHARS].rsplit(" ", 1)[0]
    return (cut or line[:MAX_TITLE_CHARS]).rstrip(",;:") + "…"


@dataclass(frozen=True, slots=True)
class ThreadTitler:
    """Writes the titles of one agent's threads.

    ``model`` writes them; ``account`` opens the usage account of one title call, given its model's
    label, its thread's id and its run id.
    """

    model: SideModel
    account: Callable[[str, str, str], RunAccount]

    def for_run(
        self, store: ThreadStore, thread: ThreadInfo, run_id: str, plan: ThreadPlan
    ) -> Callable[[str], None] | None:
        """What a run tells when its answer is saved: titling the thread, if this is its first answer and untitled.

        A thread whose first answer failed is titled after the next one that succeeds; one answered before
        (titled, or its title call failed) is not asked again.
        """
        if thread.title is not None:
            return None
        if any(isinstance(message, AssistantMessage) for message in plan.history):
            return None
        question = next((m.text for m in plan.history if isinstance(m, UserMessage)), "")
        return partial(self.after_answer, store, thread, run_id, question) if question else None

    def after_answer(self, store: ThreadStore, thread: ThreadInfo, run_id: str, question: str, answer: str) -> None:
        """The thread's first answer was saved: write its title in the background."""
        work = self._write(store, thread, run_id, question, answer)
        in_background(work, name=f"title {run_id}")

    async def _write(self, store: ThreadStore, thread: ThreadInfo, run_id: str, question: str, answer: str) -> None:
        try:
            title = await self._call(thread.id, run_id, question, answer)
            if not title:
                logger.warning("thread run %r: the title call answered no title; the thread stays untitled", run_id)
                return
            await store.set_title(thread, title, if_untitled=True)
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            logger.warning("thread run %r: no title was written: %s", run_id, _reason(exc))

    async def _call(self, thread_id: str, run_id: str, question: str, answer: str) -> str:
        account = self.account(self.model.label, thread_id, f"{run_id}.title")
        try:
            await account.check()  # a budget spent refuses the title as it would a run
            text, usage = await side_answer(self.model, title_prompt(question, answer), TITLE_TOKENS)
            account.add(usage)
            return clean_title(text)
        finally:
            await _closed(account.close())


def thread_titler(agent: Agent, account: Callable[[str, str, str], RunAccount]) -> ThreadTitler | None:
    """The titler of ``agent``'s stored threads; None when it writes none (``titles = false``, the echo model)."""
    model = agent.title_model
    if model is None or model.label.startswith("builtin:"):
        return None
    return ThreadTitler(model, account)


async def _closed(closing: Coroutine[Any, Any, float | None]) -> None:
    try:
        await closing
    except Exception as exc:
        logger.warning("a title call's usage was not settled: %s", _reason(exc))


def _reason(exc: Exception) -> str:
    """What went wrong, for the log: an upstream's own detail, never a body that may hold the prompt."""
    return f"{type(exc).__name__}: {exc}"

"""A stored thread's summary for one run: read when the run starts, replaced while the run holds the thread."""

from __future__ import annotations

import logging
from collections.abc import Sequence

from chatgate.context.summary import ContextSummary
from chatgate.store import StoredMessage, StoredSummary, ThreadInfo, ThreadStore

__all__ = ["SummaryKeeper"]

logger = logging.getLogger("chatgate.summaries")


class SummaryKeeper:
    """The summary of ``thread`` as this run knows it (``current``), and where a new one is saved.

    ``stored`` is the thread's stored messages as the run read them: a summary covers through one of
    them, and the store keeps that message's position beside it.
    """

    def __init__(
        self,
        store: ThreadStore,
        thread: ThreadInfo,
        run_id: str,
        stored: Sequence[StoredMessage],
        current: StoredSummary | None,
    ) -> None:
        self.current = None if current is None else _as_context(current)
        self._store = store
        self._thread = thread
        self._run_id = run_id
        self._stored = stored

    def covered(self, through: str) -> int:
        """How many stored messages a summary through the message ``through`` covers (0: not stored)."""
        for index, message in enumerate(self._stored):
            if message.public_id == through:
                return index + 1
        return 0

    async def save(self, summary: ContextSummary) -> bool:
        """Use ``summary`` from now on in this run, and store it; False (logged) when the store did not take it.

        A summary not stored is still used for this run; the next turn writes another.
        """
        self.current = summary
        position = self.covered(summary.through)
        if not position:
            return False
        try:
            saved = await self._store.save_context_summary(
                self._thread, self._run_id, _as_stored(summary, self._stored[position - 1].seq)
            )
        except Exception as exc:
            logger.warning("thread run %r: its summary was not stored: %s", self._run_id, exc)
            return False
        if not saved:
            logger.warning(
                "thread run %r: its summary was not stored, the run no longer holds the thread", self._run_id
            )
        return saved


def _as_context(stored: StoredSummary) -> ContextSummary:
    return ContextSummary(stored.text, stored.through, stored.messages, stored.tokens, stored.model, stored.created_at)


def _as_stored(summary: ContextSummary, through_seq: int) -> StoredSummary:
    return StoredSummary(
        summary.text,
        summary.through,
        through_seq,
        summary.messages,
        summary.tokens,
        summary.model,
        summary.created_at,
    )

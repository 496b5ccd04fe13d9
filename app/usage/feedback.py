"""Feedback on answers: one score per person per run, kept beside the run's usage row (docs/prompts.md#feedback).

A feedback is named by the run it scores (``agent``, ``run_id``) and the run's owner (``key_id``,
``person``: only the owner may give it, so the owner is also the rater). It copies the run's prompt
version and variant when written, so ``/usage`` and ``/agents/{agent}/experiment`` group it as the run.
In the store (table ``feedback``), or in this process's memory with no store. A comment and tags are
the person's data: never logged, never a metric label, deleted with a stored thread.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from typing import Protocol

from chatgate.config import FeedbackScale
from chatgate.store import Engine

__all__ = [
    "Feedback",
    "FeedbackBook",
    "FeedbackTally",
    "MemoryFeedback",
    "RunOwner",
    "SqlFeedback",
    "valid_scores",
]


def valid_scores(scale: FeedbackScale) -> tuple[int, ...]:
    """The scores a scale takes."""
    return (-1, 1) if scale == "thumbs" else (1, 2, 3, 4, 5)


@dataclass(frozen=True, slots=True)
class RunOwner:
    """The run a feedback scores, as its owner names it: ``key_id`` and ``person`` as on its usage row."""

    agent: str
    run_id: str
    key_id: str | None
    person: str | None


@dataclass(frozen=True, slots=True)
class Feedback:
    """One person's feedback on one run. ``thread_key`` names the stored thread it was given in, if any."""

    run: RunOwner
    score: int
    opinion: int  # +1 positive, -1 negative, 0 neutral (3 stars): experiment.opinion
    comment: str | None = None
    tags: tuple[str, ...] = ()
    thread_key: str | None = None
    message_id: str | None = None
    prompt_version: str | None = None
    variant: str | None = None


@dataclass(frozen=True, slots=True)
class FeedbackTally:
    """Feedback on a set of runs: how many, their scores' sum, how many positive and negative."""

    count: int = 0
    score_sum: int = 0
    positive: int = 0
    negative: int = 0

    def __add__(self, other: FeedbackTally) -> FeedbackTally:
        return FeedbackTally(
            self.count + other.count,
            self.score_sum + other.score_sum,
            self.positive + other.positive,
            self.negative + other.negative,
        )

    @classmethod
    def of(cls, feedback: Feedback) -> FeedbackTally:
        """One feedback's tally."""
        return cls(1, feedback.score, int(feedback.opinion > 0), int(feedback.opinion < 0))

    def figures(self) -> dict[str, float | int | None]:
        """``feedback``, ``positive``, ``negative``, ``mean_score``, ``positive_share`` (of positive and negative)."""
        if not self.count:
            return {"feedback": 0, "positive": 0, "negative": 0, "mean_score": None, "positive_share": None}
        return {
            "feedback": self.count,
            "positive": self.positive,
            "negative": self.negative,
            "mean_score": round(self.score_sum / self.count, 4),
            "positive_share": round(self.positive / judged, 4) if (judged := self.positive + self.negative) else None,
        }


class FeedbackBook(Protocol):
    """Where feedback is kept."""

    async def give(self, feedback: Feedback) -> bool:
        """Keep ``feedback``, replacing the owner's earlier one on that run: True if it is the first."""
        ...

    async def withdraw(self, run: RunOwner) -> bool:
        """Remove the owner's feedback on that run: False if there was none."""
        ...


class MemoryFeedback:
    """Feedback in this process's memory (no store): lost at restart, like the in-memory usage ledger."""

    def __init__(self) -> None:
        self._kept: dict[RunOwner, Feedback] = {}

    async def give(self, feedback: Feedback) -> bool:
        """Keep it; True if the run had none from its owner."""
        first = feedback.run not in self._kept
        self._kept[feedback.run] = feedback
        return first

    async def withdraw(self, run: RunOwner) -> bool:
        """Drop it."""
        return self._kept.pop(run, None) is not None

    def tally(self, run: RunOwner) -> FeedbackTally:
        """The feedback on one run, at once (the in-memory ledger's summary)."""
        kept = self._kept.get(run)
        return FeedbackTally.of(kept) if kept is not None else FeedbackTally()


class SqlFeedback:
    """Feedback in the store's ``feedback`` table (app/store/schema.py), one row per run and owner."""

    def __init__(self, engine: Engine) -> None:
        self._engine = engine

    async def give(self, feedback: Feedback) -> bool:
        """Insert, or update the owner's row: one statement, so two at once leave one row."""
        run, now = feedback.run, time.time()
        values = (
            run.agent, run.run_id, run.key_id or "", run.person or "", feedback.score, feedback.opinion,
            feedback.comment, json.dumps(list(feedback.tags)), feedback.thread_key, feedback.message_id,
            feedback.prompt_version, feedback.variant, now,
        )  # fmt: skip
        sql = (
            "INSERT INTO feedback (agent, run_id, key_id, person, score, opinion, comment, tags, thread_key,"
            " message_id, prompt_version, variant, created_at, updated_at)"
            " VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $13)"
            " ON CONFLICT (agent, run_id, key_id, person) DO UPDATE SET score = excluded.score,"
            " opinion = excluded.opinion, comment = excluded.comment, tags = excluded.tags,"
            " updated_at = excluded.updated_at"
            " RETURNING created_at"
        )
        async with self._engine.transaction() as tx:
            rows = await tx.fetch(sql, *values)
        return float(rows[0]["created_at"]) == now

    async def withdraw(self, run: RunOwner) -> bool:
        """Delete the owner's row."""
        sql = "DELETE FROM feedback WHERE agent = $1 AND run_id = $2 AND key_id = $3 AND person = $4"
        async with self._engine.transaction() as tx:
            return await tx.execute(sql, run.agent, run.run_id, run.key_id or "", run.person or "") > 0

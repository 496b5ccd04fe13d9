"""The usage ledger: one row per run (who, agent, thread, model, prompt, time, tokens, cost), and its summaries.

In the configured store (table ``usage``, app/store/schema.py), or, with no store, in this process's
memory (lost at restart, per process; bounded: see ``MemoryLedger``). ``summary`` groups rows by person,
key, agent, model, UTC day, prompt version and variant (docs/prompts.md); people always by their key
too (``people_apart``).
"""

from __future__ import annotations

import logging
from collections import deque
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from typing import Any, Literal, Protocol, TypeAlias

from chatgate.store import Engine
from chatgate.usage.feedback import FeedbackTally, MemoryFeedback, RunOwner

__all__ = [
    "GROUPS",
    "MEMORY_LEDGER_RUNS",
    "Group",
    "MemoryLedger",
    "SqlUsageLedger",
    "UsageLedger",
    "UsageRecord",
    "day_of",
]

logger = logging.getLogger("chatgate.usage")

MEMORY_LEDGER_RUNS = 50_000
"""The most runs the in-memory ledger keeps (a run's row is about 0.5 kB: some 25 MB at most)."""

Group: TypeAlias = Literal["person", "key", "agent", "model", "day", "prompt_version", "variant"]
GROUPS: tuple[Group, ...] = ("person", "key", "agent", "model", "day", "prompt_version", "variant")
_COLUMNS: dict[Group, str] = {
    "person": "person",
    "key": "key_id",
    "agent": "agent",
    "model": "model",
    "day": "day",
    "prompt_version": "prompt_version",
    "variant": "variant",
}
_SUMS = ("input_tokens", "output_tokens", "reasoning_tokens", "cached_input_tokens", "cost_usd")
# A run's feedback is its owner's: the row of the same agent, run and key and person ('' for none).
_FEEDBACK_JOIN = (
    "LEFT JOIN feedback f ON f.agent = u.agent AND f.run_id = u.run_id"
    " AND f.key_id = COALESCE(u.key_id, '') AND f.person = COALESCE(u.person, '')"
)


def day_of(at: float) -> str:
    """The UTC day of a time in seconds since the epoch: ``2026-11-25``."""
    return datetime.fromtimestamp(at, UTC).strftime("%Y-%m-%d")


def _months_around(at: float) -> tuple[float, float, float]:
    """00:00 UTC on the first of the month before the one ``at`` falls in, of that month, and of the next."""
    now = datetime.fromtimestamp(at, UTC)
    year, month = now.year, now.month
    before = (year - 1, 12) if month == 1 else (year, month - 1)
    after = (year + 1, 1) if month == 12 else (year, month + 1)
    first, this, then = (datetime(y, m, 1, tzinfo=UTC).timestamp() for y, m in (before, (year, month), after))
    return first, this, then


@dataclass(frozen=True, slots=True)
class UsageRecord:
    """One run's usage. A token count is None when no call reported it; ``cost_usd`` None: no price or no usage."""

    at: float
    key_id: str | None
    person: str | None
    agent: str
    thread_id: str | None
    run_id: str
    model: str
    calls: int
    unreported_calls: int
    input_tokens: int | None
    output_tokens: int | None
    reasoning_tokens: int | None
    cached_input_tokens: int | None
    cost_usd: float | None
    prompt_version: str | None = None
    variant: str | None = None
    trace_id: str | None = None  # the run's invoke_agent span, when traced: its feedback goes under it
    span_id: str | None = None


_RECORD_FIELDS = tuple(UsageRecord.__dataclass_fields__)


class UsageLedger(Protocol):
    """Where runs' usage is kept."""

    async def record(self, record: UsageRecord) -> None:
        """Keep one run's usage."""
        ...

    def keep(self, record: UsageRecord) -> bool:
        """Keep one run's usage at once if this ledger can without waiting (in memory); else False."""
        ...

    async def summary(
        self,
        group_by: Sequence[Group],
        since: float,
        until: float,
        *,
        key_id: str | None = None,
        person: str | None = None,
    ) -> list[dict[str, Any]]:
        """Totals per group over ``since <= at < until``, optionally only one key's (and person's) runs.

        ``key_id`` or ``person`` ``""`` selects the runs with none (no keys configured; no person named).
        """
        ...

    async def prompt_versions(self, agent: str) -> list[dict[str, Any]]:
        """The prompt versions ``agent``'s runs answered under, per variant: runs and first and last use."""
        ...

    async def run(self, owner: RunOwner) -> UsageRecord | None:
        """The row of run ``owner.run_id`` of ``owner.agent``, if it is that key's and person's; else None."""
        ...


def people_apart(group_by: Sequence[Group]) -> tuple[Group, ...]:
    """``group_by``, with ``key`` added when it groups by ``person``.

    A person is who a key named, or (no key) who signed in: so a trusted key's ``x-chatgate-user: iss#sub``
    never merges with that signed-in person, nor one key's ``alice`` with another's.
    """
    if "person" in group_by and "key" not in group_by:
        return (*group_by, "key")
    return tuple(group_by)


def _row(groups: Mapping[str, Any], records: Sequence[UsageRecord], feedback: FeedbackTally) -> dict[str, Any]:
    row: dict[str, Any] = dict(groups)
    row["runs"] = len(records)
    row["model_calls"] = sum(r.calls for r in records)
    row["unreported_calls"] = sum(r.unreported_calls for r in records)
    for field in _SUMS:
        values = [getattr(r, field) for r in records if getattr(r, field) is not None]
        row[field] = sum(values) if values else None
    row["unpriced_runs"] = sum(1 for r in records if r.cost_usd is None)
    return row | feedback.figures()


class MemoryLedger:
    """The ledger with no store: this process's runs of this calendar month and the last, at most ``max_runs``.

    Budgets do not read the ledger (they have their own counters, app/usage/counters.py), so it keeps what
    ``/usage`` answers by default (this month) and the month before; older runs are dropped as new ones
    come. ``max_runs`` bounds it whatever the traffic: past it the oldest run goes (logged once).
    """

    def __init__(self, max_runs: int = MEMORY_LEDGER_RUNS, feedback: MemoryFeedback | None = None) -> None:
        self._records: deque[UsageRecord] = deque(maxlen=max_runs)
        self._feedback = feedback if feedback is not None else MemoryFeedback()
        self._warned = False
        self._months = (0.0, 0.0, 0.0)  # ``_months_around`` the last row: recomputed when a row leaves its month

    def __len__(self) -> int:
        """How many runs are kept."""
        return len(self._records)

    async def record(self, record: UsageRecord) -> None:
        """Append the run's row, dropping rows older than last month, and the oldest one when full."""
        self.keep(record)

    def keep(self, record: UsageRecord) -> bool:
        """``record`` at once, without waiting (this ledger can): True."""
        kept_since, month_start, month_end = self._months
        if not month_start <= record.at < month_end:
            kept_since, month_start, month_end = self._months = _months_around(record.at)
        while self._records and self._records[0].at < kept_since:
            self._records.popleft()
        if len(self._records) == self._records.maxlen and not self._warned:
            self._warned = True
            logger.warning(
                "the in-memory usage ledger is full (%d runs): older runs leave /usage; set [store] url to keep them",
                self._records.maxlen,
            )
        self._records.append(record)
        return True

    async def summary(
        self,
        group_by: Sequence[Group],
        since: float,
        until: float,
        *,
        key_id: str | None = None,
        person: str | None = None,
    ) -> list[dict[str, Any]]:
        """Group the matching rows in Python."""
        group_by = people_apart(group_by)
        groups: dict[tuple[Any, ...], list[UsageRecord]] = {}
        for record in self._records:
            if not since <= record.at < until or (key_id is not None and (record.key_id or "") != key_id):
                continue
            if person is not None and (record.person or "") != person:
                continue
            values = asdict(record) | {"day": day_of(record.at)}
            groups.setdefault(tuple(values[_COLUMNS[g]] for g in group_by), []).append(record)
        rows = [
            _row(dict(zip(group_by, key, strict=True)), records, self._feedback_on(records))
            for key, records in groups.items()
        ]
        return sorted(rows, key=lambda row: tuple(str(row[g]) for g in group_by))

    def _feedback_on(self, records: Sequence[UsageRecord]) -> FeedbackTally:
        total = FeedbackTally()
        for r in records:
            total += self._feedback.tally(RunOwner(r.agent, r.run_id, r.key_id, r.person))
        return total

    async def run(self, owner: RunOwner) -> UsageRecord | None:
        """The owner's row of that run, if kept."""
        for record in reversed(self._records):
            if (record.agent, record.run_id, record.key_id, record.person) == (
                owner.agent, owner.run_id, owner.key_id, owner.person,
            ):  # fmt: skip
                return record
        return None

    async def prompt_versions(self, agent: str) -> list[dict[str, Any]]:
        """Grouped in Python, as ``summary`` is."""
        seen: dict[tuple[str, str | None], list[float]] = {}
        for record in self._records:
            if record.agent == agent and record.prompt_version is not None:
                seen.setdefault((record.prompt_version, record.variant), []).append(record.at)
        rows = [_version_row(version, variant, len(at), min(at), max(at)) for (version, variant), at in seen.items()]
        return sorted(rows, key=lambda row: row["first_used"])


class SqlUsageLedger:
    """The ledger in the store's ``usage`` table (SQLite or PostgreSQL)."""

    def __init__(self, engine: Engine) -> None:
        self._engine = engine

    def keep(self, record: UsageRecord) -> bool:
        """False: a row in the store is written by ``record``, in the background."""
        return False

    async def record(self, record: UsageRecord) -> None:
        """One ``INSERT``."""
        values = asdict(record)
        columns = [*values, "day"]
        placeholders = ", ".join(f"${i}" for i in range(1, len(columns) + 1))
        async with self._engine.transaction() as tx:
            await tx.execute(
                f"INSERT INTO usage ({', '.join(columns)}) VALUES ({placeholders})", *values.values(), day_of(record.at)
            )

    async def summary(
        self,
        group_by: Sequence[Group],
        since: float,
        until: float,
        *,
        key_id: str | None = None,
        person: str | None = None,
    ) -> list[dict[str, Any]]:
        """One ``GROUP BY`` query; the group columns come from ``GROUPS`` only, never from the request."""
        group_by = people_apart(group_by)
        columns = [f"u.{_COLUMNS[g]} AS {g}" for g in group_by]
        sums = [f"SUM(u.{field}) AS {field}" for field in _SUMS]
        where = ["u.at >= $1", "u.at < $2"]
        args: list[Any] = [since, until]
        for column, value in (("key_id", key_id), ("person", person)):
            if value is not None:  # "" matches no key (no keys configured) or no person
                args.append(value)
                where.append(f"COALESCE(u.{column}, '') = ${len(args)}")
        sql = (
            f"SELECT {', '.join([*columns, 'COUNT(*) AS runs', 'SUM(u.calls) AS model_calls'])},"
            f" SUM(u.unreported_calls) AS unreported_calls, {', '.join(sums)},"
            " SUM(CASE WHEN u.cost_usd IS NULL THEN 1 ELSE 0 END) AS unpriced_runs,"
            " COUNT(f.score) AS feedback, SUM(f.score) AS score_sum,"
            " SUM(CASE WHEN f.opinion > 0 THEN 1 ELSE 0 END) AS positive,"
            " SUM(CASE WHEN f.opinion < 0 THEN 1 ELSE 0 END) AS negative"
            f" FROM usage u {_FEEDBACK_JOIN} WHERE {' AND '.join(where)}"
        )
        if group_by:
            order = ", ".join(f"u.{_COLUMNS[g]}" for g in group_by)
            sql += f" GROUP BY {order} ORDER BY {order}"
        async with self._engine.read() as tx:
            rows = await tx.fetch(sql, *args)
        result = []
        for row in rows:
            if not group_by and not row["runs"]:
                continue
            out: dict[str, Any] = {g: row[g] for g in group_by}
            for name in ("runs", "model_calls", "unreported_calls", "unpriced_runs", *_SUMS[:-1]):
                out[name] = None if row[name] is None else int(row[name])
            out["cost_usd"] = None if row["cost_usd"] is None else float(row["cost_usd"])
            tally = FeedbackTally(*(int(row[name] or 0) for name in ("feedback", "score_sum", "positive", "negative")))
            result.append(_row_order(out) | tally.figures())
        return result

    async def run(self, owner: RunOwner) -> UsageRecord | None:
        """The owner's row of that run (the latest, should a client have reused an AG-UI ``runId``)."""
        sql = (
            f"SELECT {', '.join(_RECORD_FIELDS)} FROM usage WHERE agent = $1 AND run_id = $2"
            " AND COALESCE(key_id, '') = $3 AND COALESCE(person, '') = $4 ORDER BY at DESC LIMIT 1"
        )
        async with self._engine.read() as tx:
            rows = await tx.fetch(sql, owner.agent, owner.run_id, owner.key_id or "", owner.person or "")
        return UsageRecord(**{name: rows[0][name] for name in _RECORD_FIELDS}) if rows else None

    async def prompt_versions(self, agent: str) -> list[dict[str, Any]]:
        """One ``GROUP BY`` over the agent's rows that name a version."""
        sql = (
            "SELECT prompt_version, variant, COUNT(*) AS runs, MIN(at) AS first_at, MAX(at) AS last_at FROM usage"
            " WHERE agent = $1 AND prompt_version IS NOT NULL GROUP BY prompt_version, variant ORDER BY first_at"
        )
        async with self._engine.read() as tx:
            rows = await tx.fetch(sql, agent)
        return [
            _version_row(row["prompt_version"], row["variant"], int(row["runs"]), row["first_at"], row["last_at"])
            for row in rows
        ]


def _version_row(version: str, variant: str | None, runs: int, first: float, last: float) -> dict[str, Any]:
    when = {"first_used": datetime.fromtimestamp(first, UTC).isoformat()}
    when["last_used"] = datetime.fromtimestamp(last, UTC).isoformat()
    return {"prompt_version": version, "variant": variant, "runs": runs, **when}


def _row_order(row: dict[str, Any]) -> dict[str, Any]:
    keys = [k for k in row if k in GROUPS]
    rest = ["runs", "model_calls", "unreported_calls", *_SUMS, "unpriced_runs"]
    return {k: row[k] for k in [*keys, *rest]}

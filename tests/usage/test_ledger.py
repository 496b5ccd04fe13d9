"""The ledger's filters on SQLite, PostgreSQL and in memory: a caller's own rows and nobody else's; people
grouped apart by the key that named them; the in-memory ledger's bounds."""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from pathlib import Path

import pytest

from chatgate.store import open_store
from chatgate.usage.ledger import MemoryLedger, SqlUsageLedger, UsageLedger, UsageRecord


def _record(key_id: str | None, person: str | None, tokens: int, at: float | None = None) -> UsageRecord:
    at = time.time() if at is None else at
    return UsageRecord(at, key_id, person, "bot", "t1", f"r{tokens}", "up:m", 1, 0, tokens, 1, None, None, None)


async def _check(ledger: UsageLedger) -> None:
    callers = [("k1", "alice"), ("k1", None), (None, "alice"), (None, None)]
    for tokens, (key_id, person) in zip((10, 20, 30, 40), callers, strict=True):
        await ledger.record(_record(key_id, person, tokens))
    now = time.time()

    async def inputs(**only: str | None) -> list[int]:
        rows = await ledger.summary([], now - 60, now + 60, **only)
        return [row["input_tokens"] for row in rows]

    assert await inputs() == [100]  # admin: everyone's
    assert await inputs(key_id="k1") == [30]  # a key: its own and its people's
    assert await inputs(key_id="k1", person="alice") == [10]  # a person named by k1: theirs only
    # A caller with no key id (a signed-in person): never every key's rows, only those with no key.
    assert await inputs(key_id="", person="alice") == [30]
    assert await inputs(key_id="") == [70]
    assert await inputs(key_id="k2") == []


async def _in_the_store(check: Callable[[UsageLedger], Awaitable[None]], store_url: str, tmp_path: Path) -> None:
    store = await open_store(store_url, tmp_path)
    try:
        await check(SqlUsageLedger(store.engine))
    finally:
        await store.close()


async def test_the_ledger_in_the_store_filters_a_callers_own_rows(store_url: str, tmp_path: Path) -> None:
    await _in_the_store(_check, store_url, tmp_path)


async def test_the_ledger_in_memory_filters_the_same() -> None:
    await _check(MemoryLedger())


async def _people(ledger: UsageLedger) -> None:
    signed_in = "https://id.example#alice"  # a signed-in person: no key
    for tokens, key_id in ((1, None), (10, "k1"), (100, "k2")):  # k1 and k2 name the same person
        await ledger.record(_record(key_id, signed_in, tokens))
    await ledger.record(_record("k1", "alice", 1000))
    now = time.time()
    rows = await ledger.summary(["person"], now - 60, now + 60)
    assert {(row["person"], row["key"], row["input_tokens"]) for row in rows} == {
        ("alice", "k1", 1000),
        (signed_in, None, 1),
        (signed_in, "k1", 10),
        (signed_in, "k2", 100),
    }


async def test_people_are_grouped_apart_by_the_key_that_named_them_in_the_store(store_url: str, tmp_path: Path) -> None:
    await _in_the_store(_people, store_url, tmp_path)


async def test_people_are_grouped_apart_by_the_key_that_named_them_in_memory() -> None:
    await _people(MemoryLedger())


async def test_the_ledger_in_memory_keeps_at_most_max_runs_the_newest(caplog: pytest.LogCaptureFixture) -> None:
    ledger = MemoryLedger(max_runs=100)
    for n in range(1, 1001):
        await ledger.record(_record("k1", None, n))
    assert len(ledger) == 100
    assert [r.message for r in caplog.records].count(
        "the in-memory usage ledger is full (100 runs): older runs leave /usage; set [store] url to keep them"
    ) == 1
    now = time.time()
    (row,) = await ledger.summary([], now - 60, now + 60)
    assert row["runs"] == 100 and row["input_tokens"] == sum(range(901, 1001))  # runs 901..1000


async def test_the_ledger_in_memory_drops_runs_older_than_last_month() -> None:
    ledger = MemoryLedger()

    def at(month: int, day: int = 15) -> float:
        return datetime(2026, month, day, tzinfo=UTC).timestamp()

    for month, tokens in ((8, 1), (9, 2), (10, 3)):
        await ledger.record(_record("k1", None, tokens, at(month)))
    await ledger.record(_record("k1", None, 4, at(11, 1)))  # November: August and September leave
    assert len(ledger) == 2
    rows = await ledger.summary(["day"], at(1), at(12))
    assert [(row["day"], row["input_tokens"]) for row in rows] == [("2026-10-15", 3), ("2026-11-01", 4)]
    await ledger.record(_record("k1", None, 5, datetime(2027, 1, 2, tzinfo=UTC).timestamp()))
    assert len(ledger) == 1  # in January, last month is December of the year before

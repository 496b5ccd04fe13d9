"""The ledger's filters on SQLite, PostgreSQL and in memory: a caller's own rows and nobody else's."""

from __future__ import annotations

import time
from pathlib import Path

from chatgate.store import open_store
from chatgate.usage.ledger import MemoryLedger, SqlUsageLedger, UsageLedger, UsageRecord


def _record(key_id: str | None, person: str | None, tokens: int) -> UsageRecord:
    at = time.time()
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


async def test_the_ledger_in_the_store_filters_a_callers_own_rows(store_url: str, tmp_path: Path) -> None:
    store = await open_store(store_url, tmp_path)
    try:
        await _check(SqlUsageLedger(store.engine))
    finally:
        await store.close()


async def test_the_ledger_in_memory_filters_the_same() -> None:
    await _check(MemoryLedger())

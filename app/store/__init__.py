"""Server-held conversations: the ``ThreadStore`` interface and ``open_store`` for a ``[store] url``.

Nothing outside this package writes SQL. See docs/conversations.md.
"""

from __future__ import annotations

from pathlib import Path

from chatgate.store.base import (
    BUSY_RETRY_AFTER,
    STALE_RUN_SECONDS,
    AuditEntry,
    MessageStatus,
    NewMessage,
    RunningTurn,
    StoredMessage,
    StoredSummary,
    SystemState,
    ThreadBusy,
    ThreadError,
    ThreadInfo,
    ThreadStore,
    ThreadSummary,
    UnknownThread,
)
from chatgate.store.postgres import PostgresEngine
from chatgate.store.sql import Engine, SqlThreadStore
from chatgate.store.sqlite import SqliteEngine, sqlite_path

__all__ = [
    "BUSY_RETRY_AFTER",
    "STALE_RUN_SECONDS",
    "AuditEntry",
    "Engine",
    "MessageStatus",
    "NewMessage",
    "RunningTurn",
    "StoredMessage",
    "StoredSummary",
    "SystemState",
    "ThreadBusy",
    "ThreadError",
    "ThreadInfo",
    "ThreadStore",
    "ThreadSummary",
    "UnknownThread",
    "open_store",
]


async def open_store(url: str, base_dir: Path, *, lock_timeout: float = 10.0) -> SqlThreadStore:
    """Connect to ``url`` (``sqlite:///...`` or ``postgresql://...``) and bring its schema up to date.

    ``lock_timeout``: how many seconds a statement waits for another connection's lock before the
    store raises ``StoreBusy``.
    """
    engine: SqliteEngine | PostgresEngine
    if url.startswith("sqlite:///"):
        engine = await SqliteEngine.open(sqlite_path(url, base_dir), lock_timeout=lock_timeout)
    else:
        engine = await PostgresEngine.open(url, lock_timeout=lock_timeout)
    store = SqlThreadStore(engine)
    try:
        await store.migrate()
    except BaseException:
        await store.close()
        raise
    return store

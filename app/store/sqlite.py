"""The SQLite engine (``sqlite:///path``): one ``aiosqlite`` connection per process, WAL mode.

Transactions are serialised in the process by a lock and across processes by ``BEGIN IMMEDIATE``
(with a busy timeout), so the conditional updates in ``sql.py`` are atomic here too. A lock another
connection holds past the busy timeout ("database is locked") is ``StoreBusy``, never a bare
``sqlite3.OperationalError``: the app answers it 503 ``store_busy``.
"""

from __future__ import annotations

import asyncio
import re
import sqlite3
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import aiosqlite

from chatgate.errors import StoreBusy

__all__ = ["MIN_SQLITE", "SqliteEngine", "sqlite_path"]

_PARAMETER = re.compile(r"\$(\d+)")

# SQLITE_BUSY (another connection holds the file's lock) and SQLITE_LOCKED, with their extended codes.
_BUSY_CODES = (sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED)

MIN_SQLITE = (3, 35, 0)
"""The oldest SQLite the store runs on: its turns take a thread with ``INSERT``/``UPDATE ... RETURNING``."""


def sqlite_path(url: str, base_dir: Path) -> Path:
    """The file ``sqlite:///relative.db`` (beside the config) or ``sqlite:////absolute.db`` names."""
    path = Path(url.removeprefix("sqlite:///"))
    return path if path.is_absolute() else base_dir / path


def _is_busy(exc: BaseException) -> bool:
    return isinstance(exc, sqlite3.OperationalError) and getattr(exc, "sqlite_errorcode", 0) & 0xFF in _BUSY_CODES


def _busy(exc: BaseException) -> StoreBusy:
    return StoreBusy(f"SQLite is locked by another connection: {exc}")


class _Transaction:
    def __init__(self, connection: aiosqlite.Connection) -> None:
        self._connection = connection

    async def execute(self, sql: str, *args: Any) -> int:
        cursor = await self._connection.execute(_PARAMETER.sub(r"?\1", sql), args)
        return cursor.rowcount

    async def fetch(self, sql: str, *args: Any) -> list[Mapping[str, Any]]:
        # One trip to the connection's thread, not two (execute, then fetchall): each costs a wake-up.
        rows = await self._connection.execute_fetchall(_PARAMETER.sub(r"?\1", sql), args)
        return [dict(row) for row in rows]


class SqliteEngine:
    """An open SQLite database."""

    migration_lock: tuple[str, ...] = ()

    def __init__(self, connection: aiosqlite.Connection) -> None:
        self._connection = connection
        self._lock = asyncio.Lock()

    @classmethod
    async def open(cls, path: Path, *, lock_timeout: float = 10.0) -> SqliteEngine:
        """Open (creating) the database file; refuse an SQLite older than ``MIN_SQLITE`` at once.

        ``lock_timeout`` (seconds) is how long a statement waits for another connection's lock.
        """
        if sqlite3.sqlite_version_info < MIN_SQLITE:
            needed = ".".join(map(str, MIN_SQLITE))
            raise RuntimeError(
                f"the SQLite store needs SQLite {needed} or later, and this Python's sqlite3 module has"
                f" {sqlite3.sqlite_version}: use a newer Python build (the official images have 3.40+) or PostgreSQL"
            )
        path.parent.mkdir(parents=True, exist_ok=True)
        connection = await aiosqlite.connect(path, isolation_level=None)
        connection.row_factory = aiosqlite.Row
        await connection.execute("PRAGMA journal_mode=WAL")
        await connection.execute(f"PRAGMA busy_timeout={max(1, round(lock_timeout * 1000))}")
        return cls(connection)

    @asynccontextmanager
    async def transaction(self) -> AsyncIterator[_Transaction]:
        """``BEGIN IMMEDIATE`` ... ``COMMIT``, or ``ROLLBACK`` on any exception (cancellation included)."""
        async with self._lock:
            try:
                await self._connection.execute("BEGIN IMMEDIATE")
            except sqlite3.OperationalError as exc:
                if _is_busy(exc):
                    raise _busy(exc) from exc
                raise
            try:
                yield _Transaction(self._connection)
            except BaseException as exc:
                await asyncio.shield(self._connection.execute("ROLLBACK"))
                if _is_busy(exc):
                    raise _busy(exc) from exc
                raise
            try:
                await asyncio.shield(self._connection.execute("COMMIT"))
            except sqlite3.OperationalError as exc:
                if self._connection.in_transaction:  # a COMMIT refused for a lock leaves it open
                    await asyncio.shield(self._connection.execute("ROLLBACK"))
                if _is_busy(exc):
                    raise _busy(exc) from exc
                raise

    @asynccontextmanager
    async def read(self) -> AsyncIterator[_Transaction]:
        """One query, with no ``BEGIN``.

        Under the lock all the same: the connection is shared, and a query run beside another
        coroutine's open transaction would read what that transaction has not committed.
        """
        async with self._lock:
            try:
                yield _Transaction(self._connection)
            except sqlite3.OperationalError as exc:
                if _is_busy(exc):
                    raise _busy(exc) from exc
                raise

    async def close(self) -> None:
        """Close the connection."""
        await self._connection.close()

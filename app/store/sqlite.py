"""The SQLite engine (``sqlite:///path``): one ``aiosqlite`` connection per process, WAL mode.

Transactions are serialised in the process by a lock and across processes by ``BEGIN IMMEDIATE``
(with a busy timeout), so the conditional updates in ``sql.py`` are atomic here too.
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

__all__ = ["MIN_SQLITE", "SqliteEngine", "sqlite_path"]

_PARAMETER = re.compile(r"\$(\d+)")

MIN_SQLITE = (3, 35, 0)
"""The oldest SQLite the store runs on: its turns take a thread with ``INSERT``/``UPDATE ... RETURNING``."""


def sqlite_path(url: str, base_dir: Path) -> Path:
    """The file ``sqlite:///relative.db`` (beside the config) or ``sqlite:////absolute.db`` names."""
    path = Path(url.removeprefix("sqlite:///"))
    return path if path.is_absolute() else base_dir / path


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

    migration_lock: str | None = None

    def __init__(self, connection: aiosqlite.Connection) -> None:
        self._connection = connection
        self._lock = asyncio.Lock()

    @classmethod
    async def open(cls, path: Path) -> SqliteEngine:
        """Open (creating) the database file; refuse an SQLite older than ``MIN_SQLITE`` at once."""
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
        await connection.execute("PRAGMA busy_timeout=10000")
        return cls(connection)

    @asynccontextmanager
    async def transaction(self) -> AsyncIterator[_Transaction]:
        """``BEGIN IMMEDIATE`` ... ``COMMIT``, or ``ROLLBACK`` on any exception (cancellation included)."""
        async with self._lock:
            await self._connection.execute("BEGIN IMMEDIATE")
            try:
                yield _Transaction(self._connection)
            except BaseException:
                await asyncio.shield(self._connection.execute("ROLLBACK"))
                raise
            await asyncio.shield(self._connection.execute("COMMIT"))

    @asynccontextmanager
    async def read(self) -> AsyncIterator[_Transaction]:
        """One query, with no ``BEGIN``.

        Under the lock all the same: the connection is shared, and a query run beside another
        coroutine's open transaction would read what that transaction has not committed.
        """
        async with self._lock:
            yield _Transaction(self._connection)

    async def close(self) -> None:
        """Close the connection."""
        await self._connection.close()

"""The PostgreSQL engine (``postgresql://...``): an ``asyncpg`` pool, for several replicas on one database.

Migrations take a transaction-scoped advisory lock, so replicas starting together apply them once.
Every connection has ``lock_timeout`` set (``[store] lock_timeout_seconds``): a statement that waits
longer for another session's lock fails with ``StoreBusy`` (503 ``store_busy``), as SQLite's
"database is locked" does, instead of waiting for ever; the migration lock alone waits unbounded.
Waiting for a free pooled connection is bounded the same way: with all ``POOL_SIZE`` connections in
use for ``lock_timeout_seconds``, the request gets ``StoreBusy`` too, never a hang.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from typing import Any

import asyncpg  # type: ignore[import-untyped]

from chatgate.errors import StoreBusy, StoreUnavailable

__all__ = ["POOL_SIZE", "PostgresEngine"]

POOL_SIZE = 10
"""How many connections one process opens to PostgreSQL, at most (one when idle)."""

_MIGRATION_LOCK_ID = 0x63686174  # "chat"

# What PostgreSQL being down, restarting or unreachable looks like to asyncpg.
_OUTAGE = (
    OSError,
    TimeoutError,
    asyncpg.PostgresConnectionError,
    asyncpg.exceptions.OperatorInterventionError,
    asyncpg.InterfaceError,
)

# What another session holding a lock looks like: lock_timeout reached, or a deadlock broken.
_BUSY = (asyncpg.exceptions.LockNotAvailableError, asyncpg.exceptions.DeadlockDetectedError)


def _unavailable(exc: BaseException) -> StoreUnavailable:
    if isinstance(exc, _BUSY):
        return StoreBusy(f"PostgreSQL is locked by another session: {type(exc).__name__}: {exc}")
    return StoreUnavailable(f"PostgreSQL is unavailable: {type(exc).__name__}: {exc}")


class _Transaction:
    def __init__(self, connection: Any) -> None:
        self._connection = connection

    async def execute(self, sql: str, *args: Any) -> int:
        status: str = await self._connection.execute(sql, *args)
        last = status.rsplit(" ", 1)[-1]
        return int(last) if last.isdigit() else 0

    async def fetch(self, sql: str, *args: Any) -> list[Mapping[str, Any]]:
        rows: list[Mapping[str, Any]] = await self._connection.fetch(sql, *args)
        return rows


async def _no_reset_query(connection: Any) -> None:
    """Return a connection to the pool without asyncpg's reset query, a round trip per release.

    The store changes no session state (no ``SET``, ``LISTEN``, cursor or session advisory lock: the
    migration lock is transaction-scoped), and asyncpg still rolls back a transaction left open.
    """


class PostgresEngine:
    """A pool of connections to one PostgreSQL database."""

    migration_lock: tuple[str, ...] = (
        "SET LOCAL lock_timeout = 0",  # replicas starting together wait for the first one's migration
        f"SELECT pg_advisory_xact_lock({_MIGRATION_LOCK_ID})",
    )

    def __init__(self, pool: Any, *, lock_timeout: float = 10.0) -> None:
        self._pool = pool
        self._lock_timeout = lock_timeout
        # One permit per pooled connection: waiting here is waiting for a free one, bounded by
        # ``lock_timeout``. Opening a connection stays outside the bound (a slow or unreachable
        # server is an outage, ``StoreUnavailable``, not a busy store).
        self._free = asyncio.Semaphore(POOL_SIZE)

    @classmethod
    async def open(cls, url: str, *, lock_timeout: float = 10.0) -> PostgresEngine:
        """Connect a pool to ``url``; a statement waits at most ``lock_timeout`` seconds for a lock.

        A request for a free pooled connection waits as long at most.
        """
        settings = {"lock_timeout": f"{max(1, round(lock_timeout * 1000))}ms"}
        pool = await asyncpg.create_pool(
            url, min_size=1, max_size=POOL_SIZE, reset=_no_reset_query, server_settings=settings
        )
        return cls(pool, lock_timeout=lock_timeout)

    @asynccontextmanager
    async def _connection(self) -> AsyncIterator[Any]:
        try:
            if self._free.locked():  # only a full pool pays for wait_for's task
                await asyncio.wait_for(self._free.acquire(), self._lock_timeout)
            else:
                await self._free.acquire()
        except TimeoutError as exc:
            raise StoreBusy(
                f"PostgreSQL: all {POOL_SIZE} pooled connections stayed in use for {self._lock_timeout:g}s"
            ) from exc
        try:
            async with self._pool.acquire() as connection:
                yield connection
        finally:
            self._free.release()

    @asynccontextmanager
    async def transaction(self) -> AsyncIterator[_Transaction]:
        """A transaction on a pooled connection; ``StoreUnavailable`` when the server cannot be reached."""
        try:
            async with self._connection() as connection, connection.transaction():
                yield _Transaction(connection)
        except (*_OUTAGE, *_BUSY) as exc:
            raise _unavailable(exc) from exc

    @asynccontextmanager
    async def read(self) -> AsyncIterator[_Transaction]:
        """A pooled connection for one query, which is atomic without ``BEGIN`` and ``COMMIT`` trips."""
        try:
            async with self._connection() as connection:
                yield _Transaction(connection)
        except (*_OUTAGE, *_BUSY) as exc:
            raise _unavailable(exc) from exc

    async def close(self) -> None:
        """Close the pool."""
        await self._pool.close()

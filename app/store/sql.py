"""``SqlThreadStore``: the one ``ThreadStore`` implementation, over a small per-engine ``Engine``.

Statements use ``$1``-style parameters (the SQLite engine rewrites them). Every public method is one
transaction. The rules that keep a thread consistent live here, in SQL:

- one running run per thread: ``begin_run`` is a conditional update of ``active_run`` that succeeds
  only when no live run holds the thread and the revision is the one the request read;
- a run's turn is written only while that run still holds the thread (``active_run = run``), so a run
  that lost the thread (declared dead, thread reset or deleted) cannot overwrite anything;
- a run's heartbeat is refreshed at each checkpoint; one silent for ``STALE_RUN_SECONDS`` died with its
  process and no longer blocks the thread.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from contextlib import AbstractAsyncContextManager
from dataclasses import replace
from typing import Any, Protocol

from chatgate.history import Message
from chatgate.ids import new_id
from chatgate.store.base import (
    STALE_RUN_SECONDS,
    AuditEntry,
    MessageStatus,
    NewMessage,
    RunningTurn,
    StoredMessage,
    StoredSummary,
    SystemState,
    ThreadBusy,
    ThreadInfo,
    ThreadSummary,
    UnknownThread,
)
from chatgate.store.codec import decode_message, encode_message
from chatgate.store.schema import MIGRATIONS

__all__ = ["STALLED_RUNS", "Engine", "SqlThreadStore", "Transaction"]

_THREAD_COLUMNS = (
    "key, owner, agent, id, system_kind, system_value, revision, active_run, created_at, updated_at,"
    " last_client_run, title, archived_at"
)

STALLED_RUNS = f"SELECT {_THREAD_COLUMNS} FROM threads WHERE heartbeat < $1 AND active_run IS NOT NULL LIMIT $2"
"""The recovery sweep's query (``stalled_runs``); the partial index ``threads_by_heartbeat`` (migration 7) serves it."""


class Transaction(Protocol):
    """One open transaction."""

    async def execute(self, sql: str, *args: Any) -> int:
        """Run a statement; the number of rows it changed."""
        ...

    async def fetch(self, sql: str, *args: Any) -> list[Mapping[str, Any]]:
        """Run a query; its rows."""
        ...


class Engine(Protocol):
    """What a database engine provides: transactions, and the statements that serialise migrations."""

    migration_lock: tuple[str, ...]

    def transaction(self) -> AbstractAsyncContextManager[Transaction]:
        """A transaction: committed when the block ends, rolled back when it raises."""
        ...

    def read(self) -> AbstractAsyncContextManager[Transaction]:
        """For one query on its own, which needs no transaction around it (no ``BEGIN``/``COMMIT`` trips)."""
        ...

    async def close(self) -> None:
        """Close the connections."""
        ...


class SqlThreadStore:
    """``ThreadStore`` over an ``Engine``. Call ``migrate()`` once before use (``open_store`` does)."""

    def __init__(self, engine: Engine) -> None:
        self._engine = engine

    @property
    def engine(self) -> Engine:
        """The engine, for the other tables kept in this database (the usage ledger, app/usage/)."""
        return self._engine

    async def migrate(self) -> int:
        """Apply the migrations this database has not seen; returns the schema version."""
        async with self._engine.transaction() as tx:
            for statement in self._engine.migration_lock:
                await tx.fetch(statement)
            await tx.execute("CREATE TABLE IF NOT EXISTS schema_version (version BIGINT NOT NULL)")
            rows = await tx.fetch("SELECT MAX(version) AS version FROM schema_version")
            current = int(rows[0]["version"] or 0) if rows else 0
            for version, statements in enumerate(MIGRATIONS, start=1):
                if version <= current:
                    continue
                for statement in statements:
                    await tx.execute(statement)
                await tx.execute("INSERT INTO schema_version (version) VALUES ($1)", version)
            return len(MIGRATIONS)

    async def get_thread(self, owner: str, agent: str, thread_id: str) -> ThreadInfo | None:
        """The thread, or None if this owner has none by that id."""
        async with self._engine.read() as tx:
            return await _thread(tx, owner, agent, thread_id)

    async def list_threads(
        self,
        owner: str,
        agent: str,
        *,
        limit: int | None = None,
        after: tuple[float, str] | None = None,
        archived: bool = True,
    ) -> list[ThreadSummary]:
        """The owner's threads on ``agent``, most recently updated first, titled by the first user text.

        Paged by key (``after``: the last listed thread's ``updated_at`` and id), so a page costs its own rows.
        """
        args: list[object] = [owner, agent]
        where = "t.owner = $1 AND t.agent = $2"
        if after is not None:
            args += [after[0], after[1]]
            where += " AND (t.updated_at < $3 OR (t.updated_at = $3 AND t.id < $4))"
        if not archived:
            where += " AND t.archived_at IS NULL"
        page = ""
        if limit is not None:
            args.append(limit)
            page = f" LIMIT ${len(args)}"
        async with self._engine.read() as tx:
            rows = await tx.fetch(
                "SELECT t.id, t.updated_at, t.created_at, t.title, t.archived_at,"
                " (SELECT m.body FROM messages m WHERE m.thread_key = t.key AND m.role = 'user'"
                " ORDER BY m.seq LIMIT 1) AS first_user"
                f" FROM threads t WHERE {where} ORDER BY t.updated_at DESC, t.id DESC{page}",
                *args,
            )
        summaries = []
        for row in rows:
            title = row["title"] or ""
            if not title and row["first_user"] is not None:
                first = decode_message("user", row["first_user"], "")
                title = getattr(first, "text", "")[:80]
            times = float(row["updated_at"]), float(row["created_at"])
            summaries.append(ThreadSummary(row["id"], title, *times, archived=row["archived_at"] is not None))
        return summaries

    async def messages(self, thread: ThreadInfo) -> list[StoredMessage]:
        """The thread's messages in order."""
        async with self._engine.read() as tx:
            rows = await tx.fetch(
                "SELECT seq, id, client_id, role, body, status, run_id FROM messages"
                " WHERE thread_key = $1 ORDER BY seq",
                thread.key,
            )
        return [
            StoredMessage(
                row["id"],
                row["client_id"],
                int(row["seq"]),
                decode_message(row["role"], row["body"], row["id"]),
                row["status"],
                row["run_id"],
            )
            for row in rows
        ]

    async def begin_run(
        self,
        owner: str,
        agent: str,
        thread_id: str,
        run_id: str,
        *,
        revision: int,
        append: Sequence[NewMessage] = (),
        drop_from_seq: int | None = None,
        dead_run: bool = True,
        client_run: str | None = None,
    ) -> ThreadInfo:
        """Take the thread for ``run_id`` and commit the user's turn; ``ThreadBusy`` if it cannot.

        A new thread (``revision`` 0) is created already taken, and a known one is taken by an ``UPDATE``
        that returns it: one statement either way, not an insert, an update and a read.
        """
        now = time.time()
        async with self._engine.transaction() as tx:
            if revision == 0:
                rows = await tx.fetch(
                    "INSERT INTO threads (key, owner, agent, id, revision, active_run, heartbeat, created_at,"
                    " updated_at, last_client_run) VALUES ($1, $2, $3, $4, 1, $5, $6, $6, $6, $7)"
                    f" ON CONFLICT (owner, agent, id) DO NOTHING RETURNING {_THREAD_COLUMNS}",
                    new_id("thr"),
                    owner,
                    agent,
                    thread_id,
                    run_id,
                    now,
                    client_run,
                )
            else:
                rows = await tx.fetch(
                    "UPDATE threads SET active_run = $1, heartbeat = $2, revision = revision + 1, updated_at = $2,"
                    " last_client_run = $8 WHERE owner = $3 AND agent = $4 AND id = $5 AND revision = $6"
                    f" AND (active_run IS NULL OR heartbeat < $7) RETURNING {_THREAD_COLUMNS}",
                    run_id,
                    now,
                    owner,
                    agent,
                    thread_id,
                    revision,
                    now - STALE_RUN_SECONDS,
                    client_run,
                )
            if not rows:
                raise ThreadBusy()  # created by another request since it was read, or held, or changed
            thread = _as_thread(rows[0])
            if revision != 0 and dead_run:
                await _forget_dead_run(tx, thread.key)
            if drop_from_seq is not None:
                await tx.execute("DELETE FROM messages WHERE thread_key = $1 AND seq >= $2", thread.key, drop_from_seq)
                await tx.execute(
                    "DELETE FROM thread_summaries WHERE thread_key = $1 AND through_seq >= $2",
                    thread.key,
                    drop_from_seq,
                )
            for new in append:
                await _insert(tx, thread.key, new.message, new.client_id, "complete", None, now)
            return thread

    async def checkpoint(self, running: Sequence[RunningTurn]) -> None:
        """Save each turn so far as ``partial`` and refresh its heartbeat if its run still holds the thread.

        One transaction for every run of the process (``checkpoint_runs``): one ``BEGIN``, one ``COMMIT``
        and, on SQLite, one turn of the connection's lock, however many runs are streaming.
        """
        async with self._engine.transaction() as tx:
            for thread, run_id, turn in running:
                if await _still_running(tx, thread, run_id):
                    await _write_turn(tx, thread, run_id, turn, "partial", keep_run=True)

    async def finish_run(
        self,
        thread: ThreadInfo,
        run_id: str,
        turn: Sequence[Message],
        status: MessageStatus,
        *,
        checkpointed: bool = True,
    ) -> bool:
        """Save the run's turn with ``status`` and release the thread; False if the run no longer holds it.

        A run no checkpoint was handed (most runs under ``CHECKPOINT_SECONDS``) wrote no partial copy, so
        the turn goes in without the ``DELETE`` that clears one: a trip less.
        """
        async with self._engine.transaction() as tx:
            # Released first: the update both checks the run still holds the thread and keeps it locked
            # until the turn is written, so no other run can take it in between.
            released = await tx.execute(
                "UPDATE threads SET active_run = NULL, heartbeat = NULL, revision = revision + 1, updated_at = $1"
                " WHERE key = $2 AND active_run = $3",
                time.time(),
                thread.key,
                run_id,
            )
            if released != 1:
                return False
            await _write_turn(tx, thread, run_id, turn, status, keep_run=False, clear=checkpointed)
            return True

    async def stalled_runs(self, heartbeat_before: float, limit: int = 100) -> list[ThreadInfo]:
        """Threads whose run's heartbeat is older than ``heartbeat_before`` (NULL heartbeats are idle)."""
        async with self._engine.read() as tx:
            rows = await tx.fetch(STALLED_RUNS, heartbeat_before, limit)
        return [_as_thread(row) for row in rows]

    async def set_system(
        self, owner: str, agent: str, thread_id: str, system: SystemState, *, by: str | None, revision: int | None
    ) -> ThreadInfo:
        """Seed (before the first message, creating the thread) or swap the system message."""
        now = time.time()
        async with self._engine.transaction() as tx:
            await tx.execute(
                "INSERT INTO threads (key, owner, agent, id, created_at, updated_at) VALUES ($1, $2, $3, $4, $5, $5)"
                " ON CONFLICT (owner, agent, id) DO NOTHING",
                new_id("thr"),
                owner,
                agent,
                thread_id,
                now,
            )
            thread = await _held(tx, owner, agent, thread_id, revision)
            has_messages = await tx.fetch("SELECT 1 AS one FROM messages WHERE thread_key = $1 LIMIT 1", thread.key)
            action = "swap" if has_messages else "seed"
            return await _change_system(tx, thread, system, action, by, now)

    async def reset(
        self,
        owner: str,
        agent: str,
        thread_id: str,
        system: SystemState | None,
        *,
        by: str | None,
        revision: int | None,
    ) -> ThreadInfo:
        """Clear the messages (and the feedback on them); keep (``system`` None) or replace the system message."""
        now = time.time()
        async with self._engine.transaction() as tx:
            thread = await _held(tx, owner, agent, thread_id, revision)
            await tx.execute("DELETE FROM messages WHERE thread_key = $1", thread.key)
            await tx.execute("DELETE FROM thread_summaries WHERE thread_key = $1", thread.key)
            await tx.execute("DELETE FROM feedback WHERE thread_key = $1", thread.key)  # on answers now gone
            await tx.execute("UPDATE threads SET title = NULL WHERE key = $1", thread.key)
            return await _change_system(tx, replace(thread, title=None), system or thread.system, "reset", by, now)

    async def set_title(self, thread: ThreadInfo, title: str | None, *, if_untitled: bool = False) -> bool:
        """Name the thread (None: no name); with ``if_untitled`` only if it has none. False: not changed."""
        untitled = " AND title IS NULL" if if_untitled else ""
        async with self._engine.transaction() as tx:
            sql = f"UPDATE threads SET title = $1 WHERE key = $2{untitled} RETURNING key"
            rows = await tx.fetch(sql, title, thread.key)
            return bool(rows)

    async def set_archived(self, thread: ThreadInfo, archived: bool) -> bool:
        """Archive the thread, keeping when it was first archived, or bring it back; False if it is gone."""
        async with self._engine.transaction() as tx:
            sql = "UPDATE threads SET archived_at = CASE WHEN $1 THEN COALESCE(archived_at, $2) END WHERE key = $3"
            return await tx.execute(sql, archived, time.time(), thread.key) > 0

    async def delete(self, owner: str, agent: str, thread_id: str) -> bool:
        """Remove the thread, its messages, audit, approvals, summary and the feedback given in it."""
        async with self._engine.transaction() as tx:
            thread = await _thread(tx, owner, agent, thread_id)
            if thread is None:
                return False
            for table in ("messages", "system_audit", "approvals", "thread_summaries", "feedback"):
                await tx.execute(f"DELETE FROM {table} WHERE thread_key = $1", thread.key)
            await tx.execute("DELETE FROM threads WHERE key = $1", thread.key)
            return True

    async def context_summary(self, thread: ThreadInfo) -> StoredSummary | None:
        """The thread's summary of the turns its model no longer sees, if one was written."""
        async with self._engine.read() as tx:
            rows = await tx.fetch(
                "SELECT text, through_id, through_seq, messages, tokens, model, created_at FROM thread_summaries"
                " WHERE thread_key = $1",
                thread.key,
            )
        if not rows:
            return None
        row = rows[0]
        return StoredSummary(
            row["text"],
            row["through_id"],
            int(row["through_seq"]),
            int(row["messages"]),
            int(row["tokens"]),
            row["model"],
            float(row["created_at"]),
        )

    async def save_context_summary(self, thread: ThreadInfo, run_id: str, summary: StoredSummary) -> bool:
        """Replace the thread's summary, if ``run_id`` still holds the thread; False (nothing written) if not."""
        async with self._engine.transaction() as tx:
            if not await _still_running(tx, thread, run_id):
                return False
            await tx.execute("DELETE FROM thread_summaries WHERE thread_key = $1", thread.key)
            await tx.execute(
                "INSERT INTO thread_summaries"
                " (thread_key, text, through_id, through_seq, messages, tokens, model, created_at)"
                " VALUES ($1, $2, $3, $4, $5, $6, $7, $8)",
                thread.key,
                summary.text,
                summary.through,
                summary.through_seq,
                summary.messages,
                summary.tokens,
                summary.model,
                summary.created_at,
            )
            return True

    async def audit(self, thread: ThreadInfo) -> list[AuditEntry]:
        """The thread's system-message changes, oldest first."""
        async with self._engine.transaction() as tx:
            rows = await tx.fetch(
                "SELECT at, action, system_kind, system_value, by_key FROM system_audit"
                " WHERE thread_key = $1 ORDER BY at",
                thread.key,
            )
        return [
            AuditEntry(row["action"], SystemState(row["system_kind"], row["system_value"]), row["by_key"], row["at"])
            for row in rows
        ]

    async def claim_approval(self, approval_id: str, thread: ThreadInfo) -> bool:
        """True for the first claim of ``approval_id`` on ``thread`` only (a primary-key insert)."""
        async with self._engine.transaction() as tx:
            inserted = await tx.execute(
                "INSERT INTO approvals (approval_id, thread_key, claimed_at) VALUES ($1, $2, $3)"
                " ON CONFLICT (thread_key, approval_id) DO NOTHING",
                approval_id,
                thread.key,
                time.time(),
            )
            return inserted == 1

    async def settle_approval(self, approval_id: str, thread: ThreadInfo, outcome: str) -> None:
        """Record the outcome of a claimed approval on ``thread``."""
        async with self._engine.transaction() as tx:
            await tx.execute(
                "UPDATE approvals SET outcome = $1, settled_at = $2 WHERE thread_key = $3 AND approval_id = $4",
                outcome,
                time.time(),
                thread.key,
                approval_id,
            )

    async def settled_approval(self, approval_id: str, thread: ThreadInfo) -> str | None:
        """The outcome recorded for ``approval_id`` on ``thread``."""
        async with self._engine.read() as tx:
            rows = await tx.fetch(
                "SELECT outcome FROM approvals WHERE thread_key = $1 AND approval_id = $2", thread.key, approval_id
            )
        return rows[0]["outcome"] if rows else None

    async def ping(self) -> None:
        """One trivial query (``/readyz``); raises when the database does not answer."""
        async with self._engine.read() as tx:
            await tx.fetch("SELECT 1")

    async def close(self) -> None:
        """Close the engine."""
        await self._engine.close()


def _as_thread(row: Mapping[str, Any]) -> ThreadInfo:
    return ThreadInfo(
        key=row["key"],
        owner=row["owner"],
        agent=row["agent"],
        id=row["id"],
        system=SystemState(row["system_kind"], row["system_value"]),
        revision=int(row["revision"]),
        active_run=row["active_run"],
        created_at=float(row["created_at"]),
        updated_at=float(row["updated_at"]),
        last_client_run=row["last_client_run"],
        title=row["title"],
        archived=row["archived_at"] is not None,
    )


async def _thread(tx: Transaction, owner: str, agent: str, thread_id: str) -> ThreadInfo | None:
    rows = await tx.fetch(
        f"SELECT {_THREAD_COLUMNS} FROM threads WHERE owner = $1 AND agent = $2 AND id = $3",
        owner,
        agent,
        thread_id,
    )
    return _as_thread(rows[0]) if rows else None


async def _held(tx: Transaction, owner: str, agent: str, thread_id: str, revision: int | None) -> ThreadInfo:
    """The thread, bumped to a new revision: ``ThreadBusy`` while a live run holds it or on a stale revision."""
    now = time.time()
    changed = await tx.execute(
        "UPDATE threads SET revision = revision + 1, updated_at = $1"
        " WHERE owner = $2 AND agent = $3 AND id = $4 AND (active_run IS NULL OR heartbeat < $5)"
        " AND ($6 < 0 OR revision = $6)",
        now,
        owner,
        agent,
        thread_id,
        now - STALE_RUN_SECONDS,
        -1 if revision is None else revision,
    )
    thread = await _thread(tx, owner, agent, thread_id)
    if thread is None:
        raise UnknownThread(f"no thread {thread_id!r} on agent {agent!r}")
    if changed != 1:
        raise ThreadBusy("the thread is busy with a run or changed since you read it (revision); try again")
    if thread.active_run is not None:  # the run that held it died
        await tx.execute("UPDATE threads SET active_run = NULL, heartbeat = NULL WHERE key = $1", thread.key)
        await _forget_dead_run(tx, thread.key)
    return thread


async def _forget_dead_run(tx: Transaction, thread_key: str) -> None:
    """A run that died with its process leaves its turn marked partial; it is no longer anyone's run."""
    await tx.execute("UPDATE messages SET run_id = NULL WHERE thread_key = $1 AND run_id IS NOT NULL", thread_key)


async def _change_system(
    tx: Transaction, thread: ThreadInfo, system: SystemState, action: str, by: str | None, now: float
) -> ThreadInfo:
    await tx.execute(
        "UPDATE threads SET system_kind = $1, system_value = $2 WHERE key = $3", system.kind, system.value, thread.key
    )
    await tx.execute(
        "INSERT INTO system_audit (thread_key, at, action, system_kind, system_value, by_key)"
        " VALUES ($1, $2, $3, $4, $5, $6)",
        thread.key,
        now,
        action,
        system.kind,
        system.value,
        by,
    )
    updated = await _thread(tx, thread.owner, thread.agent, thread.id)
    assert updated is not None
    return updated


async def _still_running(tx: Transaction, thread: ThreadInfo, run_id: str) -> bool:
    changed = await tx.execute(
        "UPDATE threads SET heartbeat = $1 WHERE key = $2 AND active_run = $3", time.time(), thread.key, run_id
    )
    return changed == 1


async def _write_turn(
    tx: Transaction,
    thread: ThreadInfo,
    run_id: str,
    turn: Sequence[Message],
    status: MessageStatus,
    *,
    keep_run: bool,
    clear: bool = True,
) -> None:
    """Replace what ``run_id`` wrote before with ``turn``: a checkpoint rewrites, it never appends twice.

    ``clear`` False: the caller knows ``run_id`` wrote nothing before.
    """
    if clear:
        await tx.execute("DELETE FROM messages WHERE thread_key = $1 AND run_id = $2", thread.key, run_id)
    now = time.time()
    for message in turn:
        await _insert(tx, thread.key, message, None, status, run_id if keep_run else None, now)


async def _insert(
    tx: Transaction,
    thread_key: str,
    message: Message,
    client_id: str | None,
    status: MessageStatus,
    run_id: str | None,
    now: float,
) -> None:
    """Append ``message`` after the thread's last one (its ``seq`` found by the statement itself)."""
    role, body = encode_message(message)
    await tx.execute(
        "INSERT INTO messages (thread_key, seq, id, client_id, role, body, status, run_id, created_at)"
        " VALUES ($1, (SELECT COALESCE(MAX(seq), -1) + 1 FROM messages WHERE thread_key = $1),"
        " $2, $3, $4, $5, $6, $7, $8)",
        thread_key,
        message.id or new_id("msg"),
        client_id,
        role,
        body,
        status,
        run_id,
        now,
    )

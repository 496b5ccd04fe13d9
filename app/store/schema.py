"""The store's schema as numbered migrations, applied in order at start (``schema_version`` records the last).

The statements are plain SQL both SQLite and PostgreSQL accept. Times are seconds since the epoch
(``DOUBLE PRECISION``) so both engines compare them the same way. Bytes are ``BYTEA``: PostgreSQL's
binary type, a name SQLite takes too (its values stay BLOBs). A new version is a new entry at the
end; an entry, once released, never changes.
"""

from __future__ import annotations

__all__ = ["MIGRATIONS"]

MIGRATIONS: tuple[tuple[str, ...], ...] = (
    # 1: threads, messages, the audit of system-message changes, approvals.
    (
        """CREATE TABLE threads (
            key TEXT PRIMARY KEY,
            owner TEXT NOT NULL,
            agent TEXT NOT NULL,
            id TEXT NOT NULL,
            system_kind TEXT NOT NULL DEFAULT 'agent',
            system_value TEXT,
            revision BIGINT NOT NULL DEFAULT 0,
            active_run TEXT,
            heartbeat DOUBLE PRECISION,
            created_at DOUBLE PRECISION NOT NULL,
            updated_at DOUBLE PRECISION NOT NULL,
            UNIQUE (owner, agent, id)
        )""",
        "CREATE INDEX threads_by_owner ON threads (owner, agent, updated_at)",
        """CREATE TABLE messages (
            thread_key TEXT NOT NULL,
            seq BIGINT NOT NULL,
            id TEXT NOT NULL,
            client_id TEXT,
            role TEXT NOT NULL,
            body TEXT NOT NULL,
            status TEXT NOT NULL,
            run_id TEXT,
            created_at DOUBLE PRECISION NOT NULL,
            PRIMARY KEY (thread_key, seq)
        )""",
        """CREATE TABLE system_audit (
            thread_key TEXT NOT NULL,
            at DOUBLE PRECISION NOT NULL,
            action TEXT NOT NULL,
            system_kind TEXT NOT NULL,
            system_value TEXT,
            by_key TEXT
        )""",
        "CREATE INDEX system_audit_by_thread ON system_audit (thread_key, at)",
        """CREATE TABLE approvals (
            approval_id TEXT PRIMARY KEY,
            thread_key TEXT NOT NULL,
            claimed_at DOUBLE PRECISION NOT NULL,
            outcome TEXT,
            settled_at DOUBLE PRECISION
        )""",
    ),
    # 2: an approval is claimed per thread: the same token on another thread (another owner, agent or
    # thread) is another row, never the first one's outcome.
    (
        """CREATE TABLE approvals_by_thread (
            thread_key TEXT NOT NULL,
            approval_id TEXT NOT NULL,
            claimed_at DOUBLE PRECISION NOT NULL,
            outcome TEXT,
            settled_at DOUBLE PRECISION,
            PRIMARY KEY (thread_key, approval_id)
        )""",
        "INSERT INTO approvals_by_thread (thread_key, approval_id, claimed_at, outcome, settled_at)"
        " SELECT thread_key, approval_id, claimed_at, outcome, settled_at FROM approvals",
        "DROP TABLE approvals",
        "ALTER TABLE approvals_by_thread RENAME TO approvals",
    ),
    # 3: usage, one row per run (app/usage/ledger.py); ``day`` is the UTC day of ``at``, for grouping.
    (
        """CREATE TABLE usage (
            at DOUBLE PRECISION NOT NULL,
            day TEXT NOT NULL,
            key_id TEXT,
            person TEXT,
            agent TEXT NOT NULL,
            thread_id TEXT,
            run_id TEXT NOT NULL,
            model TEXT NOT NULL,
            calls BIGINT NOT NULL,
            unreported_calls BIGINT NOT NULL,
            input_tokens BIGINT,
            output_tokens BIGINT,
            reasoning_tokens BIGINT,
            cached_input_tokens BIGINT,
            cost_usd DOUBLE PRECISION
        )""",
        "CREATE INDEX usage_by_time ON usage (at)",
        "CREATE INDEX usage_by_caller ON usage (key_id, person, at)",
    ),
    # 4: uploaded files (app/files/), scoped like threads: by owner and agent.
    (
        """CREATE TABLE files (
            owner TEXT NOT NULL,
            agent TEXT NOT NULL,
            id TEXT NOT NULL,
            media_type TEXT NOT NULL,
            name TEXT,
            size BIGINT NOT NULL,
            bytes BYTEA NOT NULL,
            created_at DOUBLE PRECISION NOT NULL,
            PRIMARY KEY (owner, agent, id)
        )""",
        "CREATE INDEX files_by_owner ON files (owner, agent, created_at)",
    ),
    # 5: a thread's summary of the turns its model no longer sees (app/context/summary_writer.py), one per thread,
    # replaced as it grows.
    (
        """CREATE TABLE thread_summaries (
            thread_key TEXT PRIMARY KEY,
            text TEXT NOT NULL,
            through_id TEXT NOT NULL,
            through_seq BIGINT NOT NULL,
            messages BIGINT NOT NULL,
            tokens BIGINT NOT NULL,
            model TEXT NOT NULL,
            created_at DOUBLE PRECISION NOT NULL
        )""",
    ),
    # 6: the client's id (AG-UI ``runId``) of the last run that took the thread: a run that answers that
    # run's pending tool calls or approvals, or regenerates its answer, names it as its parent.
    ("ALTER TABLE threads ADD COLUMN last_client_run TEXT",),
    # 7: the recovery sweep (``stalled_runs``) looks for running threads by heartbeat; a partial index
    # holds only the threads with a run, so idle threads cost it nothing.
    ("CREATE INDEX threads_by_heartbeat ON threads (heartbeat) WHERE active_run IS NOT NULL",),
    # 8: the thread's title: written after its first answer (app/threads/titles.py) or by its owner;
    # NULL until then (the list shows the first question), cleared by a reset.
    ("ALTER TABLE threads ADD COLUMN title TEXT",),
    # 9: when the owner archived the thread (CopilotKit's archive); NULL while it is not. An archived thread
    # keeps everything and still runs; only lists that leave archived threads out skip it.
    ("ALTER TABLE threads ADD COLUMN archived_at DOUBLE PRECISION",),
    # 10: the version of the system prompt a run answered under, and its variant (docs/prompts.md); NULL
    # for rows written before, and for side calls (a thread's title) that never see the agent's prompt.
    (
        "ALTER TABLE usage ADD COLUMN prompt_version TEXT",
        "ALTER TABLE usage ADD COLUMN variant TEXT",
    ),
    # 11: feedback on answers (app/usage/feedback.py): one row per run and owner ('' for no key or no
    # person), its score and opinion (+1, 0, -1), the run's prompt version and variant; ``thread_key``
    # deletes it with its thread. A traced run's usage row keeps its span's ids, for its feedback's span.
    (
        """CREATE TABLE feedback (
            agent TEXT NOT NULL,
            run_id TEXT NOT NULL,
            key_id TEXT NOT NULL,
            person TEXT NOT NULL,
            score BIGINT NOT NULL,
            opinion BIGINT NOT NULL,
            comment TEXT,
            tags TEXT NOT NULL,
            thread_key TEXT,
            message_id TEXT,
            prompt_version TEXT,
            variant TEXT,
            created_at DOUBLE PRECISION NOT NULL,
            updated_at DOUBLE PRECISION NOT NULL,
            PRIMARY KEY (agent, run_id, key_id, person)
        )""",
        "CREATE INDEX feedback_by_thread ON feedback (thread_key)",
        "ALTER TABLE usage ADD COLUMN trace_id TEXT",
        "ALTER TABLE usage ADD COLUMN span_id TEXT",
    ),
)

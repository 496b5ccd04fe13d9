"""``ThreadStore``: the one interface to server-held conversations, and the records it returns.

Each engine (``sqlite.py``, ``postgres.py``) provides a small ``Engine``; ``sql.py`` holds the one
implementation of ``ThreadStore`` over it, so both engines run exactly the same statements and rules.
Threads are addressed by ``(owner, agent, id)``: another owner's thread with the same id is simply
another thread, so it can be neither read nor disturbed.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal, Protocol, TypeAlias

from chatgate.errors import ChatgateError
from chatgate.history import Message

__all__ = [
    "BUSY_RETRY_AFTER",
    "STALE_RUN_SECONDS",
    "AuditEntry",
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
]

MessageStatus: TypeAlias = Literal["complete", "partial", "error"]

BUSY_RETRY_AFTER = 1
"""``Retry-After`` (seconds) of a 409 ``thread_busy``: a run ends, or a dead one is recovered, any moment."""

STALE_RUN_SECONDS = 15.0
"""A run whose heartbeat (its checkpoint, every second or so) is older than this died with its process.

The fallback when nothing can recover the run sooner (app/threads/recovery.py): a memory run log, or a
Redis run log that lost the run's start."""


@dataclass(frozen=True, slots=True)
class SystemState:
    """A thread's system message: the agent's own prompt, a named prompt, or free text."""

    kind: Literal["agent", "prompt", "text"] = "agent"
    value: str | None = None

    def as_json(self) -> dict[str, str | None]:
        """``{"kind", "prompt"|"text"}`` for the HTTP API."""
        if self.kind == "prompt":
            return {"kind": "prompt", "prompt": self.value}
        if self.kind == "text":
            return {"kind": "text", "text": self.value}
        return {"kind": "agent"}


@dataclass(frozen=True, slots=True)
class ThreadInfo:
    """One thread's row: who owns it, its system message, revision and the run holding it, if any.

    ``last_client_run`` is the client's id (AG-UI ``runId``) of the last run that took the thread, when
    its protocol names runs: the parent of a run that answers or regenerates that run's turn.
    ``title`` is its name, once written (after its first answer, or by its owner); ``archived`` says its
    owner archived it.
    """

    key: str
    owner: str
    agent: str
    id: str
    system: SystemState
    revision: int
    active_run: str | None
    created_at: float
    updated_at: float
    last_client_run: str | None = None
    title: str | None = None
    archived: bool = False


@dataclass(frozen=True, slots=True)
class ThreadSummary:
    """A line of ``GET /agents/{agent}/threads``."""

    id: str
    title: str
    updated_at: float
    created_at: float = 0.0
    archived: bool = False


@dataclass(frozen=True, slots=True)
class StoredSummary:
    """A thread's summary of the turns its model no longer sees (``strategy = "summarize"``, app/summaries/).

    It covers the stored messages up to and including ``through`` (the id clients know it by), at
    ``through_seq``: ``messages`` of them. ``tokens`` is what the summary takes, ``model`` who wrote it.
    """

    text: str
    through: str
    through_seq: int
    messages: int
    tokens: int
    model: str
    created_at: float


@dataclass(frozen=True, slots=True)
class StoredMessage:
    """A stored message: ``id`` is the server's, ``client_id`` the id the client gave it (if any)."""

    id: str
    client_id: str | None
    seq: int
    message: Message
    status: MessageStatus
    run_id: str | None = None

    @property
    def public_id(self) -> str:
        """The id clients know this message by."""
        return self.client_id or self.id


@dataclass(frozen=True, slots=True)
class NewMessage:
    """A message to append: the history message (its ``id`` is the server id) and the client's id."""

    message: Message
    client_id: str | None = None


@dataclass(frozen=True, slots=True)
class AuditEntry:
    """One change of a thread's system message: ``seed``, ``swap`` or ``reset``, by which key, when."""

    action: Literal["seed", "swap", "reset"]
    system: SystemState
    by: str | None
    at: float


class ThreadError(ChatgateError):
    """The store refuses an operation on a thread; its message is safe for the client.

    The store knows nothing of HTTP: the app maps each class to its answer (app/web/app.py).
    """


class UnknownThread(ThreadError):
    """No such thread for this owner and agent (HTTP: 404 ``unknown_thread``)."""


class ThreadBusy(ThreadError):
    """Another run holds the thread, or it changed under this request (HTTP: 409 ``thread_busy``)."""

    def __init__(self, message: str = "another run is in progress on this thread; try again when it ends") -> None:
        super().__init__(message)


RunningTurn: TypeAlias = tuple[ThreadInfo, str, Sequence[Message]]
"""A run's turn so far, for ``ThreadStore.checkpoint``: its thread, its run id and its messages."""


class ThreadStore(Protocol):
    """Server-held threads. Every method is one transaction (or one query); see ``sql.py`` for the rules."""

    async def get_thread(self, owner: str, agent: str, thread_id: str) -> ThreadInfo | None:
        """The thread, or None if this owner has none by that id."""
        ...

    async def list_threads(
        self,
        owner: str,
        agent: str,
        *,
        limit: int | None = None,
        after: tuple[float, str] | None = None,
        archived: bool = True,
    ) -> list[ThreadSummary]:
        """The owner's threads on ``agent``, most recently updated first (ties by id, descending).

        A page: at most ``limit``, and only those listed after the thread ``after`` (its ``updated_at``, id).
        ``archived`` False leaves archived threads out.
        """
        ...

    async def messages(self, thread: ThreadInfo) -> list[StoredMessage]:
        """The thread's messages in order."""
        ...

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
        """Make ``run_id`` the thread's one running run (creating the thread if ``revision`` is 0).

        Atomic: succeeds only if no live run holds the thread and its revision is still ``revision``,
        else raises ``ThreadBusy``. In the same transaction drops messages from ``drop_from_seq`` on
        (a regenerate) and appends ``append`` (the user's turn), so it is committed before the model runs.
        ``dead_run`` False says the thread as read at ``revision`` had no run: no dead run's partial turn
        then needs releasing (every change of run bumps the revision, so the read is still true).
        ``client_run`` is the client's id for the run, kept as the thread's ``last_client_run``.
        """
        ...

    async def checkpoint(self, running: Sequence[RunningTurn]) -> None:
        """Save what each run said so far as ``partial`` and refresh its heartbeat, all in one transaction."""
        ...

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

        Conditional (nothing is written then), so of several replicas saving one run's turn exactly one does.

        ``checkpointed`` False: no checkpoint was ever handed this run, so it left no partial copy to clear.
        """
        ...

    async def stalled_runs(self, heartbeat_before: float, limit: int = 100) -> list[ThreadInfo]:
        """Threads held by a run whose heartbeat is older than ``heartbeat_before``: maybe dead, for a sweep."""
        ...

    async def set_system(
        self, owner: str, agent: str, thread_id: str, system: SystemState, *, by: str | None, revision: int | None
    ) -> ThreadInfo:
        """Seed (no messages yet, creating the thread) or swap the system message; history is kept."""
        ...

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
        """Clear the messages; keep the system message (``system`` None) or replace it."""
        ...

    async def set_title(self, thread: ThreadInfo, title: str | None, *, if_untitled: bool = False) -> bool:
        """Name the thread (None: no name); with ``if_untitled`` only if it has none. False: not changed."""
        ...

    async def set_archived(self, thread: ThreadInfo, archived: bool) -> bool:
        """Archive the thread (``archived``) or bring it back; False if it is gone. Its messages stay."""
        ...

    async def delete(self, owner: str, agent: str, thread_id: str) -> bool:
        """Remove a thread and everything in it; False if there was none."""
        ...

    async def audit(self, thread: ThreadInfo) -> list[AuditEntry]:
        """The thread's system-message changes, oldest first."""
        ...

    async def context_summary(self, thread: ThreadInfo) -> StoredSummary | None:
        """The thread's summary of the turns its model no longer sees (``strategy = "summarize"``), if any."""
        ...

    async def save_context_summary(self, thread: ThreadInfo, run_id: str, summary: StoredSummary) -> bool:
        """Replace the thread's summary while ``run_id`` holds the thread; False if it no longer does.

        A regenerate that drops the message at ``summary.through_seq`` drops the summary too; a reset or a
        delete removes it.
        """
        ...

    async def claim_approval(self, approval_id: str, thread: ThreadInfo) -> bool:
        """Claim a single-use approval: True exactly once per ``approval_id`` on ``thread``, across processes."""
        ...

    async def settle_approval(self, approval_id: str, thread: ThreadInfo, outcome: str) -> None:
        """Record what a claimed approval on ``thread`` produced (JSON text), for replays."""
        ...

    async def settled_approval(self, approval_id: str, thread: ThreadInfo) -> str | None:
        """The outcome recorded for ``approval_id`` on ``thread``, if settled."""
        ...

    async def ping(self) -> None:
        """Raise when the database does not answer (``GET /readyz``)."""
        ...

    async def close(self) -> None:
        """Release the connections."""
        ...

"""Uploaded files in the store's ``files`` table (migration 4), each row owned by one owner and agent.

A file arrives as a file object (an upload spooled to disk, app/web/files.py) and is read into memory
only for its one write, at most ``WRITES_AT_ONCE`` at a time per process: the database driver takes the
value whole, so this bounds the memory uploads cost however many arrive at once.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterable
from dataclasses import dataclass
from typing import IO, Any

from chatgate.ids import new_id
from chatgate.media_types import media_type_essence
from chatgate.store import Engine

WRITES_AT_ONCE = 2
"""Files one process writes at once; the others wait their turn, their bytes still on disk."""

_IDS_PER_QUERY = 500

__all__ = ["WRITES_AT_ONCE", "FileRecord", "FileStore", "StoredFile"]


@dataclass(frozen=True, slots=True)
class FileRecord:
    """What is known of an upload without its bytes."""

    id: str
    media_type: str
    name: str | None
    size: int
    created_at: float


@dataclass(frozen=True, slots=True)
class StoredFile:
    """An upload with its bytes."""

    record: FileRecord
    data: bytes


class FileStore:
    """The ``files`` table over the store's engine; every query names the owner and the agent."""

    def __init__(self, engine: Engine) -> None:
        self._engine = engine
        self._writes = asyncio.Semaphore(WRITES_AT_ONCE)

    async def put(
        self, owner: str, agent: str, media_type: str, name: str | None, source: IO[bytes], size: int
    ) -> FileRecord:
        """Keep the ``size`` bytes of ``source`` (read from its start) under a fresh id."""
        record = FileRecord(new_id("file"), media_type, name, size, time.time())
        async with self._writes:
            source.seek(0)
            data = await asyncio.to_thread(source.read, size)
            async with self._engine.transaction() as tx:
                await tx.execute(
                    "INSERT INTO files (owner, agent, id, media_type, name, size, bytes, created_at)"
                    " VALUES ($1, $2, $3, $4, $5, $6, $7, $8)",
                    owner,
                    agent,
                    record.id,
                    media_type,
                    name,
                    record.size,
                    data,
                    record.created_at,
                )
            del data
        return record

    async def get(self, owner: str, agent: str, file_id: str) -> StoredFile | None:
        """The file with its bytes, or None when this owner has none by that id on ``agent``."""
        async with self._engine.read() as tx:
            rows = await tx.fetch(
                "SELECT id, media_type, name, size, created_at, bytes FROM files"
                " WHERE owner = $1 AND agent = $2 AND id = $3",
                owner,
                agent,
                file_id,
            )
        return StoredFile(_record(rows[0]), bytes(rows[0]["bytes"])) if rows else None

    async def describe(self, owner: str, agent: str, file_id: str) -> FileRecord | None:
        """The file without its bytes, or None."""
        async with self._engine.read() as tx:
            rows = await tx.fetch(
                "SELECT id, media_type, name, size, created_at FROM files WHERE owner = $1 AND agent = $2 AND id = $3",
                owner,
                agent,
                file_id,
            )
        return _record(rows[0]) if rows else None

    async def describe_many(self, owner: str, agent: str, file_ids: Iterable[str]) -> dict[str, FileRecord]:
        """The files among ``file_ids`` this owner has on ``agent``, by id, without their bytes.

        One query per ``_IDS_PER_QUERY`` ids, well within both databases' limit on parameters.
        """
        wanted = sorted(set(file_ids))
        found: dict[str, FileRecord] = {}
        async with self._engine.read() as tx:
            for start in range(0, len(wanted), _IDS_PER_QUERY):
                batch = wanted[start : start + _IDS_PER_QUERY]
                places = ", ".join(f"${n}" for n in range(3, len(batch) + 3))
                rows = await tx.fetch(
                    "SELECT id, media_type, name, size, created_at FROM files"
                    f" WHERE owner = $1 AND agent = $2 AND id IN ({places})",
                    owner,
                    agent,
                    *batch,
                )
                found.update((row["id"], _record(row)) for row in rows)
        return found

    async def list(self, owner: str, agent: str) -> list[FileRecord]:
        """The owner's files on ``agent``, newest first."""
        async with self._engine.read() as tx:
            rows = await tx.fetch(
                "SELECT id, media_type, name, size, created_at FROM files WHERE owner = $1 AND agent = $2"
                " ORDER BY created_at DESC",
                owner,
                agent,
            )
        return [_record(row) for row in rows]

    async def delete(self, owner: str, agent: str, file_id: str) -> bool:
        """Remove the file; False when this owner had none by that id."""
        async with self._engine.transaction() as tx:
            removed = await tx.execute(
                "DELETE FROM files WHERE owner = $1 AND agent = $2 AND id = $3", owner, agent, file_id
            )
        return removed == 1


def _record(row: Any) -> FileRecord:
    # A row kept before media types were checked may hold any text: it goes out as plain bytes.
    media_type = media_type_essence(row["media_type"]) or "application/octet-stream"
    return FileRecord(row["id"], media_type, row["name"], int(row["size"]), float(row["created_at"]))

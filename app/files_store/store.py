"""Uploaded files in the store's ``files`` table (migration 4), each row owned by one owner and agent."""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from chatgate.ids import new_id
from chatgate.store import Engine

__all__ = ["FileRecord", "FileStore", "StoredFile"]


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

    async def put(self, owner: str, agent: str, media_type: str, name: str | None, data: bytes) -> FileRecord:
        """Keep ``data`` under a fresh id."""
        record = FileRecord(new_id("file"), media_type, name, len(data), time.time())
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
    return FileRecord(row["id"], row["media_type"], row["name"], int(row["size"]), float(row["created_at"]))

"""Uploads one process receives at once: ``[files] max_uploads_in_flight`` in all, ``..._per_key`` per key.

An upload is spooled to disk as it arrives (app/web/files.py), so each costs little memory; the bound
keeps the files, sockets and disk one process spends on uploads finite. A key (or signed-in person;
without keys there is only the process's bound) over its share gets 429 ``too_many_uploads``, and
anyone once the process is full 503 ``uploads_busy``, both with ``Retry-After`` and before any byte of
the body is read. The counts are this process's: with ``--workers N`` or replicas each has its own.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from chatgate.config import FilesSettings
from chatgate.errors import RequestError

__all__ = ["UploadSlots"]

_RETRY_AFTER = {"retry-after": "1"}


class UploadSlots:
    """The uploads under way in this process, in all and per key."""

    def __init__(self) -> None:
        self._total = 0
        self._by_key: dict[str, int] = {}

    @contextmanager
    def hold(self, key: str | None, settings: FilesSettings) -> Iterator[None]:
        """Count one upload by ``key`` while the block runs; 429 or 503 when a bound is reached.

        ``key`` is the caller's key or person (``Caller.limits_id``); None (no keys configured) counts
        only against the process's bound.
        """
        held = self._by_key.get(key, 0) if key is not None else 0
        if key is not None and held >= settings.max_uploads_in_flight_per_key:
            raise RequestError(
                429,
                "too_many_uploads",
                f"this key already has {held} uploads under way ([files] max_uploads_in_flight_per_key);"
                " try again when one ends",
                [{"limit": "max_uploads_in_flight_per_key", "allowed": str(settings.max_uploads_in_flight_per_key)}],
                headers=_RETRY_AFTER,
            )
        if self._total >= settings.max_uploads_in_flight:
            raise RequestError(
                503,
                "uploads_busy",
                f"the server is receiving {self._total} uploads ([files] max_uploads_in_flight); try again shortly",
                [{"limit": "max_uploads_in_flight", "allowed": str(settings.max_uploads_in_flight)}],
                headers=_RETRY_AFTER,
            )
        self._total += 1
        if key is not None:
            self._by_key[key] = held + 1
        try:
            yield
        finally:
            self._total -= 1
            if key is not None:
                self._release(key)

    def _release(self, key: str) -> None:
        left = self._by_key[key] - 1
        if left:
            self._by_key[key] = left
        else:
            del self._by_key[key]

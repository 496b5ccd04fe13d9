"""Per-key limits: requests per minute (``rpm``) and concurrent streams (``max_concurrent_streams``).

``Limits`` is what the access layer asks; ``MemoryLimits`` counts in this process (the default), and
``RedisLimits`` (redis_limits.py) counts in Redis so every replica shares one budget per key. Both use
the same rules: ``rpm`` is a sliding window of the last 60 seconds, counting admitted requests only, and
a refused one says in ``Retry-After`` when the oldest of them leaves the window; a stream holds a slot
from its start until it ends, however it ends.
"""

from __future__ import annotations

import asyncio
import math
import time
from collections import deque
from collections.abc import Callable, Sequence
from typing import Any, Protocol

from chatgate.errors import RequestError

__all__ = [
    "WINDOW_SECONDS",
    "AdmissionCheck",
    "Limits",
    "MemoryLimits",
    "StreamSlot",
    "rate_limited",
    "too_many_streams",
]

WINDOW_SECONDS = 60.0


class StreamSlot(Protocol):
    """A held stream slot; ``release`` gives it back (once).

    ``expires`` is true for a slot that lapses unless ``keep`` runs beside the stream (Redis); a slot in
    process memory needs no keeping, and the stream then runs with no extra task.
    """

    expires: bool

    async def keep(self) -> None:
        """Keep the slot alive while the stream runs; returns only when cancelled."""

    async def release(self) -> None:
        """Give the slot back."""


class AdmissionCheck(Protocol):
    """A check a stream makes when it is admitted (a run's budgets, app/usage/): it may reserve something.

    When it lives in Redis and the slots do too, its step runs inside the script that takes the slot: one
    round trip for both, and nothing is reserved unless the slot is taken. Its refusal comes first, as if it
    had run on its own before the slot. What it reserved goes back through ``abandoned`` when the request
    is refused after it, and with the run otherwise.
    """

    def admission_call(self) -> tuple[Sequence[str], Sequence[str | int]] | None:
        """The Redis keys and arguments of its step (app/usage/holds.py), or None: ``precheck`` then runs alone."""

    async def precheck(self) -> None:
        """The check on its own; raises its refusal."""

    def precheck_read(self, answer: Sequence[Any]) -> None:
        """The check from its step's answer in the slot's script; raises its refusal."""

    def precheck_failed(self, error: Exception) -> None:
        """Redis did not answer that script: raise the refusal, or return to let the request through unchecked."""

    def abandoned(self) -> None:
        """The request was refused after the check passed (no slot, or its start refused): give back what it took."""

    def release_with_spend(self, slots_key: str, member: str, released: Callable[[], None]) -> None:
        """The slot it was read with (``member`` of the sorted set ``slots_key``) may go back with the run's last spend.

        The run's last write to Redis then removes the member in the same script and calls ``released``, so
        the slot's own release after the response's last byte costs no round trip (docs/performance.md).
        """


class Limits(Protocol):
    """Where per-key counts live."""

    async def admit(self, key_id: str, rpm: int) -> None:
        """Count one request of ``key_id``, or raise 429 ``rate_limited`` when ``rpm`` are already in the window."""

    async def open_stream(self, key_id: str, most: int, check: AdmissionCheck | None = None) -> StreamSlot:
        """Hold one of ``key_id``'s ``most`` stream slots, or raise 429 ``too_many_streams``.

        ``check``, if any, is made first: its refusal wins, and no slot is then held.
        """


def _who(limits_id: str) -> str:
    """Whose limit it is, in a refusal: ``key 'web'``, or ``person 'iss#user'`` for a signed-in person."""
    if limits_id.startswith("person:"):
        return f"person {limits_id.removeprefix('person:')!r}"
    return f"key {limits_id!r}"


def rate_limited(key_id: str, rpm: int, retry_after: float) -> RequestError:
    """The 429 of a key over its ``rpm``, with ``Retry-After`` in whole seconds (at least 1)."""
    seconds = max(1, math.ceil(retry_after))
    return RequestError(
        429,
        "rate_limited",
        f"{_who(key_id)} made {rpm} requests in the last minute (rpm = {rpm}); retry in {seconds} s",
        [{"limit": "rpm", "allowed": str(rpm)}],
        headers={"Retry-After": str(seconds)},
    )


def too_many_streams(key_id: str, most: int) -> RequestError:
    """The 429 of a key that already has ``most`` streams open."""
    return RequestError(
        429,
        "too_many_streams",
        f"{_who(key_id)} already has {most} streams open (max_concurrent_streams = {most})",
        [{"limit": "max_concurrent_streams", "allowed": str(most)}],
    )


class _MemorySlot:
    expires = False

    def __init__(self, counts: dict[str, int], key_id: str) -> None:
        self._counts = counts
        self._key_id = key_id
        self._held = True

    async def keep(self) -> None:
        await asyncio.get_running_loop().create_future()  # until cancelled

    async def release(self) -> None:
        if self._held:
            self._held = False
            self._counts[self._key_id] -= 1


class MemoryLimits:
    """Counts in this process: exact for one replica, and no network on the request path."""

    def __init__(self) -> None:
        self._admitted: dict[str, deque[float]] = {}
        self._streams: dict[str, int] = {}

    async def admit(self, key_id: str, rpm: int) -> None:
        """See ``Limits.admit``."""
        now = time.monotonic()
        admitted = self._admitted.setdefault(key_id, deque())
        while admitted and admitted[0] <= now - WINDOW_SECONDS:
            admitted.popleft()
        if len(admitted) >= rpm:
            # A lowered rpm (a reload) leaves more than rpm entries: the one that frees a place is rpm from the end.
            raise rate_limited(key_id, rpm, admitted[-rpm] + WINDOW_SECONDS - now)
        admitted.append(now)

    async def open_stream(self, key_id: str, most: int, check: AdmissionCheck | None = None) -> StreamSlot:
        """See ``Limits.open_stream``."""
        if check is not None:
            await check.precheck()
        if self._streams.get(key_id, 0) >= most:
            if check is not None:
                check.abandoned()
            raise too_many_streams(key_id, most)
        self._streams[key_id] = self._streams.get(key_id, 0) + 1
        return _MemorySlot(self._streams, key_id)

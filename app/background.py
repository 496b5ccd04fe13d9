"""Work that goes on after the code that started it has moved on: a task held until it ends."""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from typing import Any, TypeVar

__all__ = ["in_background"]

T = TypeVar("T")

_running: set[asyncio.Task[Any]] = set()


def in_background(work: Coroutine[Any, Any, T], *, name: str | None = None) -> asyncio.Task[T]:
    """Start ``work`` as a task of the running loop and hold a reference to it until it ends.

    The event loop keeps only weak references to its tasks: one nobody holds may be garbage-collected
    before it finishes (a usage row, a title or a tool's recorded outcome lost).
    """
    task = asyncio.get_running_loop().create_task(work, name=name)
    _running.add(task)
    task.add_done_callback(_running.discard)
    return task

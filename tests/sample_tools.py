"""Functions the tool tests import by path, as an operator's config would."""

import asyncio
import sqlite3
import threading
import time
from typing import Literal


def get_weather(city: str, unit: Literal["c", "f"] = "c") -> dict[str, object]:
    """Current weather for a city."""
    return {"city": city, "temperature": 21 if unit == "c" else 70, "unit": unit}


async def add(a: int, b: int) -> int:
    """Add two integers."""
    await asyncio.sleep(0)
    return a + b


def explode(reason: str) -> str:
    """Always fails."""
    raise RuntimeError(reason)


RELEASE = threading.Event()
HELD_RETURNED = threading.Event()


def held() -> str:
    """Blocks its thread until a test sets ``RELEASE`` (a minute at most), then sets ``HELD_RETURNED``."""
    RELEASE.wait(60)
    HELD_RETURNED.set()
    return "done"


NOT_CALLABLE = 42


def record(path: str, tag: str = "ran", note: str = "", seconds: float = 0) -> str:
    """Appends one line to a file (after ``seconds``): the approval tests count lines to count executions."""
    time.sleep(seconds)
    with open(path, "a", encoding="utf-8") as file:
        file.write(tag + "\n")
    return f"recorded {tag}"


def lone_surrogate() -> str:
    """Returns text holding a lone surrogate (as a file read with ``surrogateescape`` may)."""
    return "x\udcff y"


_HELD_LOCKS: list[sqlite3.Connection] = []


def lock_store(path: str) -> str:
    """Takes SQLite's write lock on the file at ``path`` and keeps it (``release_store`` lets it go)."""
    connection = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    connection.execute("BEGIN EXCLUSIVE")
    _HELD_LOCKS.append(connection)
    return "locked"


def release_store() -> None:
    """Let go of every lock ``lock_store`` took."""
    while _HELD_LOCKS:
        connection = _HELD_LOCKS.pop()
        connection.execute("ROLLBACK")
        connection.close()


def lone_surrogate_data() -> dict[str, object]:
    """Returns structured data holding lone surrogates, in a key and in values."""
    return {"name": "x\udcff", "k\ud800": [1, "y\udfff"]}

"""Functions the tool tests import by path, as an operator's config would."""

import asyncio
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


def slow(seconds: float) -> str:
    """Sleeps in a thread."""
    time.sleep(seconds)
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

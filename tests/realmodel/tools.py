"""A server tool for the realmodel tests that counts its runs (chatgate runs in the test's process)."""

from __future__ import annotations

RUNS: list[str] = []


def get_weather(city: str) -> str:
    """Current weather for a city."""
    RUNS.append(city)
    return f"Sunny in {city}."

"""A pytest plugin for tests/test_markers.py: after collection, print each test file and its markers."""

from __future__ import annotations

import pytest

NAMES = ("browser", "node", "postgres", "redis")


def pytest_collection_finish(session: pytest.Session) -> None:
    """One ``MARKS <file> <markers>`` line per collected test."""
    for item in session.items:
        marks = ",".join(name for name in NAMES if item.get_closest_marker(name) is not None)
        print(f"MARKS {item.nodeid.split('::')[0]} {marks or '-'}")

"""The ``browser``, ``node``, ``postgres`` and ``redis`` markers, applied at collection.

A test gets a marker when it needs that part: by fixture (``redis_url``, ``postgres_url``, the e2e
``browser``, the ``oidc_provider`` that runs on Node), or by what its file uses (Playwright, a Node
client or server, a Redis or PostgreSQL server it starts itself). So ``pytest -m "not browser"`` skips
Chromium, and ``-m "not browser and not node"`` needs only Python, Redis and PostgreSQL. pyproject.toml
registers the markers.
"""

from __future__ import annotations

import re
from functools import cache
from pathlib import Path

import pytest

_FIXTURES = {
    "browser": {"browser", "app_origin"},
    "node": {"oidc_provider"},
    "postgres": {"postgres_url"},
    "redis": {"redis_url"},
}
_SOURCES = {
    "browser": re.compile(r"playwright|from tests\.browser import"),
    "node": re.compile(
        r'run_node_client|\["node"|\["npm"|oidc_provider|tests\.mcp\.real_servers|copilotkit_app|usechat_app|build\.mjs'
    ),
    "postgres": re.compile(r"postgres_url|running_postgres|_create_database"),
    "redis": re.compile(r"redis_url|running_redis"),
}


@cache
def _file_markers(path: Path) -> frozenset[str]:
    text = path.read_text(encoding="utf-8")
    return frozenset(name for name, pattern in _SOURCES.items() if pattern.search(text))


def apply_markers(items: list[pytest.Item]) -> None:
    """Add each marker a collected test needs (see the module docstring)."""
    for item in items:
        fixtures = set(getattr(item, "fixturenames", ()))
        names = {name for name, wanted in _FIXTURES.items() if fixtures & wanted}
        names |= _file_markers(item.path)
        for name in sorted(names):
            item.add_marker(getattr(pytest.mark, name))

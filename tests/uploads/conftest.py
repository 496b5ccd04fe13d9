"""What the upload tests share: a store of each kind (SQLite file, or a fresh PostgreSQL database)."""

from __future__ import annotations

import asyncio
import secrets

import pytest

from tests.store.conftest import _create_database


def store_url(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> str:
    """A new store of the kind ``request.param`` names (``sqlite`` or ``postgres``), as ``[store] url``."""
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path_factory.mktemp('uploads') / 'chatgate.db'}"
    server_url: str = request.getfixturevalue("postgres_url")
    name = f"t_{secrets.token_hex(6)}"
    asyncio.run(_create_database(server_url, name))
    return server_url.rsplit("/", 1)[0] + f"/{name}"

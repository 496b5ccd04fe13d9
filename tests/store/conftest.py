"""``store_url``: a fresh, empty store per test, on SQLite (in tmp_path) and on the session's PostgreSQL."""

from __future__ import annotations

import asyncio
import secrets
from collections.abc import Iterator
from pathlib import Path

import asyncpg
import pytest


async def _create_database(server_url: str, name: str) -> None:
    for _ in range(100):  # the session's server may still be starting up
        try:
            connection = await asyncpg.connect(server_url)
            break
        except asyncpg.CannotConnectNowError:
            await asyncio.sleep(0.1)
    else:
        connection = await asyncpg.connect(server_url)
    try:
        await connection.execute(f'CREATE DATABASE "{name}"')
    finally:
        await connection.close()


def new_store_url(request: pytest.FixtureRequest, directory: Path) -> str:
    """A store URL no other test uses, of the kind ``request.param`` names (``sqlite`` or ``postgres``).

    A new SQLite file in ``directory``, or a new database on the session's PostgreSQL.
    """
    if request.param == "sqlite":
        return f"sqlite:///{directory / 'threads.db'}"
    server_url: str = request.getfixturevalue("postgres_url")
    name = f"t_{secrets.token_hex(6)}"
    asyncio.run(_create_database(server_url, name))
    return server_url.rsplit("/", 1)[0] + f"/{name}"


@pytest.fixture(params=["sqlite", "postgres"])
def store_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """A store URL no other test uses: a new SQLite file, or a new PostgreSQL database."""
    yield new_store_url(request, tmp_path)

"""The usage tests use the store tests' ``store_url`` (a fresh SQLite file or PostgreSQL database)."""

from tests.store.conftest import store_url

__all__ = ["store_url"]

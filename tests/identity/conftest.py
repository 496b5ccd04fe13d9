"""Sign-in tokens on stored threads run on both stores: ``store_url`` comes from tests/store/conftest.py."""

from tests.store.conftest import store_url

__all__ = ["store_url"]

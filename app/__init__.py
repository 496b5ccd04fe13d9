"""chatgate: chat frontends to any LLM, with the operator in charge of the system prompt.

The ``app`` package is the protocol-neutral core. UI protocols live in ``adapters/`` and are found
through the ``chatgate.protocols`` entry-point group, so nothing here imports them.

``app.client(model, system=...)`` is the Python API for scripts and tests (see ``app/python_api.py``).
"""

from __future__ import annotations

from typing import Any

__all__ = ["client"]


def __getattr__(name: str) -> Any:
    # Imported on first use, so ``import app.config`` stays light.
    if name == "client":
        from app.python_api import client

        return client
    raise AttributeError(f"module 'app' has no attribute {name!r}")

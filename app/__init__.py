"""chatgate: chat frontends to any LLM, with the operator in charge of the system prompt.

This package (``app/`` in the repository) is the protocol-neutral core. UI protocols live in
``chatgate.adapters`` (``adapters/`` in the repository) and are found through the ``chatgate.protocols``
entry-point group, so the core never imports them.

``chatgate.client(model, system=...)`` is the Python API for scripts and tests (see ``python_api.py``).
"""

from __future__ import annotations

from typing import Any

__all__ = ["client"]


def __getattr__(name: str) -> Any:
    # Imported on first use, so ``import chatgate.config`` stays light.
    if name == "client":
        from chatgate.scripting.client import client

        return client
    raise AttributeError(f"module 'chatgate' has no attribute {name!r}")

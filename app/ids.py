"""Identifiers chatgate makes for messages, runs and tool calls."""

from __future__ import annotations

import secrets

__all__ = ["new_id"]


def new_id(prefix: str) -> str:
    """A fresh random id such as ``msg_3f9a...``: unique enough to never collide within a thread."""
    return f"{prefix}_{secrets.token_hex(12)}"

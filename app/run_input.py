"""``RunInput``: one decoded request, the same for every UI protocol."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from app.history import Message

__all__ = ["RunInput", "ToolDefinition"]


@dataclass(frozen=True, slots=True)
class ToolDefinition:
    """A tool offered to the model: its name, description and JSON Schema for its arguments."""

    name: str
    description: str = ""
    parameters: Mapping[str, Any] = field(default_factory=lambda: {"type": "object", "properties": {}})


@dataclass(frozen=True, slots=True)
class RunInput:
    """What a UI client asked for: the history as sent, client-side tools and request facts.

    ``thread_id`` is the conversation (AG-UI ``threadId``, useChat chat ``id``); ``run_id`` names
    this run. ``variables`` are request-scoped values a client sent (AG-UI context and forwarded
    props, extra useChat body fields); only operator-allowed ones are ever used.
    """

    messages: tuple[Message, ...]
    thread_id: str = ""
    run_id: str = ""
    tools: tuple[ToolDefinition, ...] = ()
    variables: Mapping[str, Any] = field(default_factory=dict)
    continue_message_id: str | None = None

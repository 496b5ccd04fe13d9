"""The shared history model: one typed, immutable message per role.

Both UI adapters decode into these types and every provider encodes from them, so a conversation
can be checked in isolation at each boundary. Tool calls and results are linked by the id the UI or
the provider gave them (``tool_call_id``), never by an internal id.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal, TypeAlias

from pydantic_core import from_json

__all__ = [
    "HISTORY_START",
    "ActivityMessage",
    "AssistantMessage",
    "AssistantPart",
    "FilePart",
    "Message",
    "ReasoningPart",
    "SourcePart",
    "SystemMessage",
    "TextPart",
    "ToolCallPart",
    "ToolMessage",
    "UserMessage",
    "UserPart",
    "complete_arguments",
    "system_text",
]


HISTORY_START = "(The conversation so far follows.)"
"""The text of the short user turn a model is sent before a history whose first turn is the assistant's
(a useChat app's greeting): strict chat templates and Anthropic's API require a user turn first."""


@dataclass(frozen=True, slots=True)
class TextPart:
    """Plain text inside a user or assistant message."""

    text: str


@dataclass(frozen=True, slots=True)
class FilePart:
    """A file or image a user attached: a ``data:`` URL or a remote URL, with its media type."""

    media_type: str
    url: str
    filename: str | None = None


@dataclass(frozen=True, slots=True)
class ReasoningPart:
    """The model's reasoning text; ``provider_data`` keeps what the provider needs echoed back."""

    text: str
    provider_data: Mapping[str, Any] | None = None


@dataclass(frozen=True, slots=True)
class ToolCallPart:
    """A tool call the assistant made; ``arguments`` is the JSON text the model produced."""

    tool_call_id: str
    name: str
    arguments: str
    provider_data: Mapping[str, Any] | None = None


@dataclass(frozen=True, slots=True)
class SourcePart:
    """A source the answer cites: a web page (``url``) or a document (``media_type``, ``title``).

    Kept so a stored thread shows it again; never sent back to a model.
    """

    source_id: str
    url: str | None = None
    title: str | None = None
    media_type: str | None = None
    filename: str | None = None


UserPart: TypeAlias = TextPart | FilePart
AssistantPart: TypeAlias = TextPart | ReasoningPart | ToolCallPart | SourcePart


@dataclass(frozen=True, slots=True)
class SystemMessage:
    """System-voice text. ``role`` keeps whether the client called it ``system`` or ``developer``."""

    content: str
    id: str = ""
    role: Literal["system", "developer"] = "system"
    created_at: datetime | None = None


@dataclass(frozen=True, slots=True)
class UserMessage:
    """What the user said: text and attached files."""

    parts: tuple[UserPart, ...]
    id: str = ""
    created_at: datetime | None = None

    @property
    def text(self) -> str:
        """The message's text parts joined with blank lines."""
        return "\n\n".join(part.text for part in self.parts if isinstance(part, TextPart))


@dataclass(frozen=True, slots=True)
class AssistantMessage:
    """What the model answered: text, reasoning and tool calls, in order."""

    parts: tuple[AssistantPart, ...]
    id: str = ""
    created_at: datetime | None = None
    metadata: Mapping[str, Any] = field(default_factory=dict)
    """What the server notes about the answer, never sent to a model (the attempts withdrawn before it)."""

    @property
    def text(self) -> str:
        """The message's text parts concatenated."""
        return "".join(part.text for part in self.parts if isinstance(part, TextPart))

    @property
    def tool_calls(self) -> tuple[ToolCallPart, ...]:
        """The tool calls in this message, in order."""
        return tuple(part for part in self.parts if isinstance(part, ToolCallPart))


@dataclass(frozen=True, slots=True)
class ToolMessage:
    """The result of one tool call, linked by ``tool_call_id``.

    ``images`` (``data:`` URLs) are what the tool returned besides its text, for the model only: the
    providers send them where their API takes images (app/providers/). Never stored.
    """

    tool_call_id: str
    content: str
    is_error: bool = False
    id: str = ""
    created_at: datetime | None = None
    metadata: Mapping[str, Any] = field(default_factory=dict)
    images: tuple[FilePart, ...] = ()


@dataclass(frozen=True, slots=True)
class ActivityMessage:
    """A frontend's own structured UI state (AG-UI ``activity``): kept in the thread, never sent to a model."""

    activity_type: str
    content: Mapping[str, Any]
    id: str = ""
    created_at: datetime | None = None


Message: TypeAlias = SystemMessage | UserMessage | AssistantMessage | ToolMessage | ActivityMessage


def system_text(messages: tuple[Message, ...] | list[Message]) -> str | None:
    """The text of every system message in ``messages`` joined by blank lines, or None if there is none."""
    texts = [message.content for message in messages if isinstance(message, SystemMessage)]
    return "\n\n".join(texts) if texts else None


def complete_arguments(arguments: str) -> bool:
    """Whether a finished tool call's arguments are whole: a JSON object (or nothing, meaning ``{}``).

    Anything else means the model was cut off mid-call (``max_tokens``), and the call must not run.
    """
    if not arguments:
        return True
    try:
        return isinstance(from_json(arguments), dict)
    except ValueError:
        pass
    try:  # whole JSON that pydantic_core refuses (a lone surrogate escape) is not a cut-off call
        return isinstance(json.loads(arguments), dict)
    except ValueError:
        return False

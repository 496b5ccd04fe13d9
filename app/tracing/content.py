"""Message content on spans, only under ``capture_content = true``: the GenAI conventions' JSON forms.

``gen_ai.input.messages`` / ``gen_ai.output.messages`` hold ``[{"role", "parts": [...]}]``; text goes
through the logs' ``loggable`` (control characters escaped) and a file part keeps only its media type
(and a remote URL with its credentials redacted), never a ``data:`` URL's bytes.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from chatgate.history import (
    AssistantMessage,
    FilePart,
    Message,
    ReasoningPart,
    SourcePart,
    SystemMessage,
    TextPart,
    ToolCallPart,
    ToolMessage,
    UserMessage,
)
from chatgate.strict_json import utf8_safe
from chatgate.telemetry import loggable, redact_url

__all__ = ["messages_json", "span_text"]


def span_text(text: str) -> str:
    """Client text fit for a span: escaped as the logs escape it, and a lone surrogate written ``\\ud800``.

    OTLP strings are UTF-8: the exporter drops an attribute holding a lone surrogate (a tool's result
    can, e.g. text read with ``surrogateescape``), logging an error for it.
    """
    cleaned: str = utf8_safe(loggable(text))
    return cleaned


def messages_json(messages: Iterable[Message]) -> str:
    """``messages`` as the conventions' JSON message list."""
    return span_text(json.dumps([_message(message) for message in messages], ensure_ascii=False))


def _message(message: Message) -> dict[str, Any]:
    if isinstance(message, SystemMessage):
        return {"role": "system", "parts": [_text(message.content)]}
    if isinstance(message, ToolMessage):
        part = {"type": "tool_call_response", "id": message.tool_call_id, "response": loggable(message.content)}
        return {"role": "tool", "parts": [part]}
    if isinstance(message, UserMessage):
        return {"role": "user", "parts": [_part(part) for part in message.parts]}
    assert isinstance(message, AssistantMessage)
    return {"role": "assistant", "parts": [_part(part) for part in message.parts]}


def _text(text: str) -> dict[str, Any]:
    return {"type": "text", "content": loggable(text)}


def _part(part: TextPart | FilePart | ReasoningPart | ToolCallPart | SourcePart) -> dict[str, Any]:
    if isinstance(part, TextPart):
        return _text(part.text)
    if isinstance(part, SourcePart):
        return {"type": "source", "uri": redact_url(part.url) if part.url else "", "title": part.title or ""}
    if isinstance(part, ReasoningPart):
        return {"type": "reasoning", "content": loggable(part.text)}
    if isinstance(part, ToolCallPart):
        return {"type": "tool_call", "id": part.tool_call_id, "name": part.name, "arguments": loggable(part.arguments)}
    url = "" if part.url.startswith("data:") else redact_url(part.url)
    return {"type": "uri" if url else "blob", "mime_type": part.media_type, **({"uri": url} if url else {})}

"""The shared history model as JSON: how a message's parts are kept in the store's ``body`` column."""

from __future__ import annotations

import json
from typing import Any

from chatgate.history import (
    ActivityMessage,
    AssistantMessage,
    AssistantPart,
    FilePart,
    Message,
    ReasoningPart,
    SourcePart,
    SystemMessage,
    TextPart,
    ToolCallPart,
    ToolMessage,
    UserMessage,
    UserPart,
)

__all__ = ["decode_message", "encode_message"]


def encode_message(message: Message) -> tuple[str, str]:
    """``(role, body JSON)`` for ``message``; ids and times live in their own columns."""
    if isinstance(message, UserMessage):
        return "user", json.dumps({"parts": [_part(part) for part in message.parts]})
    if isinstance(message, AssistantMessage):
        answer: dict[str, Any] = {"parts": [_part(part) for part in message.parts]}
        if message.metadata:
            answer["metadata"] = dict(message.metadata)
        return "assistant", json.dumps(answer)
    if isinstance(message, ToolMessage):
        body = {"tool_call_id": message.tool_call_id, "content": message.content, "is_error": message.is_error}
        if message.metadata:
            body["metadata"] = dict(message.metadata)
        return "tool", json.dumps(body)
    if isinstance(message, ActivityMessage):
        return "activity", json.dumps({"activity_type": message.activity_type, "content": dict(message.content)})
    return "system", json.dumps({"content": message.content, "role": message.role})


def decode_message(role: str, body: str, message_id: str) -> Message:
    """The message a row holds."""
    data: dict[str, Any] = json.loads(body)
    if role == "user":
        user_parts = tuple(_user_part(part) for part in data["parts"])
        return UserMessage(user_parts, id=message_id)
    if role == "assistant":
        parts = tuple(_assistant_part(part) for part in data["parts"])
        return AssistantMessage(parts, id=message_id, metadata=data.get("metadata") or {})
    if role == "tool":
        return ToolMessage(
            data["tool_call_id"],
            data["content"],
            is_error=bool(data.get("is_error")),
            id=message_id,
            metadata=data.get("metadata") or {},
        )
    if role == "activity":
        return ActivityMessage(data["activity_type"], data["content"], id=message_id)
    return SystemMessage(data["content"], id=message_id, role=data.get("role", "system"))


def _part(part: UserPart | AssistantPart) -> dict[str, Any]:
    if isinstance(part, TextPart):
        return {"type": "text", "text": part.text}
    if isinstance(part, FilePart):
        return {"type": "file", "media_type": part.media_type, "url": part.url, "filename": part.filename}
    if isinstance(part, ReasoningPart):
        return {"type": "reasoning", "text": part.text, "provider_data": _data(part.provider_data)}
    if isinstance(part, SourcePart):
        return {
            "type": "source",
            "source_id": part.source_id,
            "url": part.url,
            "title": part.title,
            "media_type": part.media_type,
            "filename": part.filename,
        }
    return {
        "type": "tool_call",
        "tool_call_id": part.tool_call_id,
        "name": part.name,
        "arguments": part.arguments,
        "provider_data": _data(part.provider_data),
    }


def _data(value: Any) -> dict[str, Any] | None:
    return dict(value) if value else None


def _user_part(data: dict[str, Any]) -> UserPart:
    if data["type"] == "file":
        return FilePart(data["media_type"], data["url"], data.get("filename"))
    return TextPart(data["text"])


def _assistant_part(data: dict[str, Any]) -> AssistantPart:
    if data["type"] == "reasoning":
        return ReasoningPart(data["text"], provider_data=data.get("provider_data"))
    if data["type"] == "tool_call":
        return ToolCallPart(data["tool_call_id"], data["name"], data["arguments"], data.get("provider_data"))
    if data["type"] == "source":
        return SourcePart(data["source_id"], data["url"], data["title"], data["media_type"], data["filename"])
    return TextPart(data["text"])

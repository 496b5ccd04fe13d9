"""History as AG-UI messages: what ``MESSAGES_SNAPSHOT`` carries for a server-held thread.

The inverse of decoding: user text (or text and media parts), assistant text with ``toolCalls``,
reasoning as a ``reasoning`` message, tool results as ``tool`` messages (``error`` when failed), a
frontend's ``activity`` messages as they came.
Provider data travels as ``encryptedValue`` (its JSON text), as in the live stream. System
messages are never part of a stored thread and are left out.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pydantic_core import to_json

from chatgate.files import UPLOAD_PROVIDER, referenced_file
from chatgate.history import (
    ActivityMessage,
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

__all__ = ["restated_messages", "snapshot_messages", "source_value"]

_MEDIA_KINDS = ("image", "audio", "video")


def snapshot_messages(history: Sequence[Message]) -> list[dict[str, Any]]:
    """The AG-UI ``messages`` of a ``MESSAGES_SNAPSHOT`` for ``history``; ids are kept."""
    messages: list[dict[str, Any]] = []
    for message in history:
        if isinstance(message, UserMessage):
            messages.append({"id": message.id, "role": "user", "content": _user_content(message)})
        elif isinstance(message, AssistantMessage):
            messages.extend(_assistant(message))
        elif isinstance(message, ToolMessage):
            tool: dict[str, Any] = {
                "id": message.id or f"result_{message.tool_call_id}",
                "role": "tool",
                "toolCallId": message.tool_call_id,
                "content": message.content,
            }
            if message.is_error:
                tool["error"] = message.content
            messages.append(tool)
        elif isinstance(message, ActivityMessage):
            activity = {"activityType": message.activity_type, "content": dict(message.content)}
            messages.append({"id": message.id, "role": "activity", **activity})
    return messages


def restated_messages(history: Sequence[Message]) -> list[dict[str, Any]]:
    """``history`` as the client that sent it holds it: its own system and developer messages kept (with ids).

    What a retraction's ``MESSAGES_SNAPSHOT`` restates, since a client drops every message a snapshot lacks.
    """
    messages: list[dict[str, Any]] = []
    for message in history:
        if isinstance(message, SystemMessage):
            if message.id:
                messages.append({"id": message.id, "role": message.role, "content": message.content})
        elif isinstance(message, AssistantMessage) and [type(part) for part in message.parts] == [ReasoningPart]:
            # A client's reasoning message (decoded as an answer of one reasoning part) keeps its own id.
            messages.extend({**reasoning, "id": message.id} for reasoning in snapshot_messages((message,)))
        else:
            messages.extend(snapshot_messages((message,)))
    return messages


def _user_content(message: UserMessage) -> str | list[dict[str, Any]]:
    if all(isinstance(part, TextPart) for part in message.parts):
        return message.text
    parts: list[dict[str, Any]] = []
    for part in message.parts:
        if isinstance(part, TextPart):
            parts.append({"type": "text", "text": part.text})
        elif isinstance(part, FilePart):
            parts.append(_media(part))
    return parts


def _media(part: FilePart) -> dict[str, Any]:
    major = part.media_type.split("/", 1)[0]
    kind = major if major in _MEDIA_KINDS else "document"
    upload = referenced_file(part.url)
    if upload is not None:  # an upload, sent back as the FileSource a client names it by
        source = {"type": "file", "value": upload[1], "provider": UPLOAD_PROVIDER, "mimeType": part.media_type}
        return {"type": kind, "source": source}
    if part.url.startswith("data:") and ";base64," in part.url:
        data = part.url.split(";base64,", 1)[1]
        return {"type": kind, "source": {"type": "data", "value": data, "mimeType": part.media_type}}
    return {"type": kind, "source": {"type": "url", "value": part.url, "mimeType": part.media_type}}


def _assistant(message: AssistantMessage) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for index, part in enumerate(message.parts):
        if isinstance(part, ReasoningPart):
            reasoning: dict[str, Any] = {"id": f"{message.id}:r{index}", "role": "reasoning", "content": part.text}
            if part.provider_data:
                reasoning["encryptedValue"] = to_json(dict(part.provider_data)).decode()
            out.append(reasoning)
    assistant: dict[str, Any] = {"id": message.id, "role": "assistant"}
    if message.text:
        assistant["content"] = message.text
    calls = []
    for part in message.parts:
        if isinstance(part, ToolCallPart):
            call: dict[str, Any] = {
                "id": part.tool_call_id,
                "type": "function",
                "function": {"name": part.name, "arguments": part.arguments},
            }
            if part.provider_data:
                call["encryptedValue"] = to_json(dict(part.provider_data)).decode()
            calls.append(call)
    if calls:
        assistant["toolCalls"] = calls
    sources = [source_value(part) for part in message.parts if isinstance(part, SourcePart)]
    if sources:
        assistant["metadata"] = {"sources": sources}  # what the run's CUSTOM "source" events carried
    if message.text or calls:
        out.append(assistant)
    return out


def source_value(source: SourcePart) -> dict[str, Any]:
    """A cited source as the ``value`` of a ``CUSTOM`` ``source`` event (docs/files.md#sources)."""
    value: dict[str, Any] = {
        "sourceId": source.source_id,
        "sourceType": "url" if source.url is not None else "document",
    }
    if source.url is not None:
        value["url"] = source.url
    if source.title:
        value["title"] = source.title
    if source.media_type:
        value["mediaType"] = source.media_type
    if source.filename:
        value["filename"] = source.filename
    return value

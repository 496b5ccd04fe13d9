"""History as useChat ``UIMessage``s: what ``GET /agents/{agent}/threads/{id}/messages`` returns.

The inverse of decoding: a user message becomes one ``user`` UIMessage; each run of assistant and
tool messages between two user messages becomes one ``assistant`` UIMessage (its id is the first
step's), with ``step-start`` between model steps and one ``tool-NAME`` part per call in the state
its result puts it in. Provider data travels as ``providerMetadata: {"chatgate": ...}`` as in the live
stream. ``metadata.chatgate.status`` is set on an answer that was cut off (``partial``) or failed
(``error``). v5 clients get no approval states (none are stored: a pending call is ``input-available``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pydantic_core import from_json

from chatgate.config import VercelAIVersion
from chatgate.history import (
    AssistantMessage,
    FilePart,
    Message,
    ReasoningPart,
    SourcePart,
    TextPart,
    ToolCallPart,
    ToolMessage,
    UserMessage,
)

__all__ = ["ui_messages", "ui_source"]

_METADATA_KEY = "chatgate"


def ui_messages(history: Sequence[tuple[Message, str]], version: VercelAIVersion) -> list[dict[str, Any]]:
    """UIMessages for ``history``, given as ``(message, status)`` pairs in order."""
    messages: list[dict[str, Any]] = []
    group: list[tuple[Message, str]] = []
    for message, status in history:
        if isinstance(message, UserMessage):
            if group:
                messages.append(_assistant(group))
                group = []
            messages.append({"id": message.id, "role": "user", "parts": _user_parts(message)})
        elif isinstance(message, AssistantMessage | ToolMessage):
            group.append((message, status))
    if group:
        messages.append(_assistant(group))
    return [message for message in messages if message["parts"]]


def _user_parts(message: UserMessage) -> list[dict[str, Any]]:
    parts: list[dict[str, Any]] = []
    for part in message.parts:
        if isinstance(part, TextPart):
            parts.append({"type": "text", "text": part.text})
        elif isinstance(part, FilePart):
            file: dict[str, Any] = {"type": "file", "mediaType": part.media_type, "url": part.url}
            if part.filename:
                file["filename"] = part.filename
            parts.append(file)
    return parts


def _assistant(group: list[tuple[Message, str]]) -> dict[str, Any]:
    results = {m.tool_call_id: m for m, _ in group if isinstance(m, ToolMessage)}
    parts: list[dict[str, Any]] = []
    first_id = ""
    status = "complete"
    for message, message_status in group:
        if message_status != "complete":
            status = message_status
        if not isinstance(message, AssistantMessage):
            continue
        first_id = first_id or message.id
        parts.append({"type": "step-start"})
        for part in message.parts:
            if isinstance(part, TextPart):
                parts.append({"type": "text", "text": part.text, "state": "done"})
            elif isinstance(part, ReasoningPart):
                reasoning: dict[str, Any] = {"type": "reasoning", "text": part.text, "state": "done"}
                if part.provider_data:
                    reasoning["providerMetadata"] = {_METADATA_KEY: dict(part.provider_data)}
                parts.append(reasoning)
            elif isinstance(part, ToolCallPart):
                parts.append(_tool_part(part, results.get(part.tool_call_id)))
            elif isinstance(part, SourcePart):
                parts.append(ui_source(part.source_id, part.url, part.title, part.media_type, part.filename))
    ui: dict[str, Any] = {"id": first_id or "assistant", "role": "assistant", "parts": parts}
    if status != "complete":
        ui["metadata"] = {_METADATA_KEY: {"status": status}}
    return ui


def ui_source(
    source_id: str, url: str | None, title: str | None, media_type: str | None, filename: str | None
) -> dict[str, Any]:
    """A cited source as useChat's ``source-url`` (a page) or ``source-document`` part, in a stream or a message."""
    if url is not None:
        page: dict[str, Any] = {"type": "source-url", "sourceId": source_id, "url": url}
        if title:
            page["title"] = title
        return page
    document: dict[str, Any] = {
        "type": "source-document",
        "sourceId": source_id,
        "mediaType": media_type or "text/plain",
        "title": title or "Document",
    }
    if filename:
        document["filename"] = filename
    return document


def _tool_part(call: ToolCallPart, result: ToolMessage | None) -> dict[str, Any]:
    try:
        tool_input = from_json(call.arguments or "{}")
    except ValueError:
        tool_input = {}
    part: dict[str, Any] = {"type": f"tool-{call.name}", "toolCallId": call.tool_call_id, "input": tool_input}
    if call.provider_data:
        part["callProviderMetadata"] = {_METADATA_KEY: dict(call.provider_data)}
    if result is None:
        part["state"] = "input-available"
    elif result.is_error:
        part["state"] = "output-error"
        part["errorText"] = result.content
    else:
        part["state"] = "output-available"
        try:
            part["output"] = from_json(result.content)
        except ValueError:
            part["output"] = result.content
    return part

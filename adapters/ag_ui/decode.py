"""AG-UI 1.0 requests: a ``RunAgentInput`` decoded into a ``RunInput`` (``wire.py`` holds the wire types).

- ``system`` and ``developer`` become ``SystemMessage`` (the role is kept); ``user`` text and content
  parts become ``UserMessage`` (media with inline data become a ``data:`` URL, media by URL keep it,
  provider file handles are dropped); ``assistant`` text and ``toolCalls`` become ``AssistantMessage``;
  ``tool`` becomes ``ToolMessage`` (``error`` marks it failed); ``reasoning`` becomes an
  ``AssistantMessage`` holding one ``ReasoningPart``; ``activity`` becomes ``ActivityMessage`` (kept in a
  stored thread and its snapshots, never sent to the model). Unknown roles are skipped and logged.
- ``encryptedValue`` (on a reasoning message or a tool call) becomes the part's ``provider_data``: a
  JSON object this server sent is restored as that object, anything else is kept whole as
  ``{"encrypted_value": "<text>"}``. JSON held in a string (``encryptedValue``, a tool call's
  ``arguments``) gets the body's own checks (app/strict_json.py): nested too deep or holding a
  non-finite number, it is refused with a 422 naming the field.
- ``RunInput.variables``: the keys of ``forwardedProps`` (when it is an object), over one entry per
  ``context`` item named by its ``description`` with its ``value``. Only variables the operator
  declared ``client_overridable`` (and ``instructions``, when allowed) are ever used.
- ``forwardedProps.regenerate`` ``true`` asks a stored thread to drop its last answer and answer the last
  user message again (AG-UI 1.0 has no regenerate of its own; useChat's is ``regenerate-message``); a
  stateless agent answers the history as sent. Any other value than a boolean is a 422.
- ``resume`` entries answer tool approval interrupts: ``resolved`` approves unless the payload is an
  object with ``"approved": false``; ``cancelled`` denies; a payload ``"reason"`` string is kept.
"""

from __future__ import annotations

import contextlib
import logging
import mimetypes
from collections.abc import Mapping
from typing import Any

import chatgate.adapters.ag_ui.wire as wire
from chatgate.adapters.base import decode_body
from chatgate.errors import RequestError
from chatgate.files import REFERENCE_PREFIX, UPLOAD_PROVIDER, is_file_id
from chatgate.history import (
    ActivityMessage,
    AssistantMessage,
    AssistantPart,
    FilePart,
    Message,
    ReasoningPart,
    SystemMessage,
    TextPart,
    ToolCallPart,
    ToolMessage,
    UserMessage,
    UserPart,
)
from chatgate.run_input import ApprovalResponse, RunInput, ToolDefinition
from chatgate.strict_json import client_json

__all__ = ["decode_request"]

logger = logging.getLogger("chatgate.adapters.ag_ui")


def decode_request(body: bytes) -> RunInput:
    """Decode a ``RunAgentInput`` body; 400 when it is not JSON, 422 naming each wrong field."""
    request = decode_body(body, wire.run_agent_input)
    messages: list[Message] = []
    skipped: list[str] = []
    for index, message in enumerate(request.messages):
        decoded = _message(message, f"messages.{index}")
        if decoded is None:
            skipped.append(message.role)
        else:
            messages.append(decoded)
    if skipped:
        logger.info("run %r: skipped %d message(s) with role(s) %s", request.run_id, len(skipped), sorted(set(skipped)))
    return RunInput(
        messages=tuple(messages),
        thread_id=request.thread_id,
        run_id=request.run_id,
        parent_run_id=request.parent_run_id or None,
        protocol_version=request.protocol_version or None,
        tools=tuple(_tool(tool) for tool in request.tools),
        variables=_variables(request),
        approvals=tuple(_approval(entry) for entry in request.resume),
        regenerate=_regenerate(request.forwarded_props),
    )


def _regenerate(forwarded_props: Any) -> bool:
    value = forwarded_props.get("regenerate", False) if isinstance(forwarded_props, dict) else False
    if not isinstance(value, bool):
        raise RequestError(422, "invalid_regenerate", "forwardedProps.regenerate must be true or false")
    return value


def _message(message: Any, field: str) -> Message | None:
    if isinstance(message, wire.SystemMessage):
        return SystemMessage(content=message.content, id=message.id, role=message.role)
    if isinstance(message, wire.UserMessage):
        if isinstance(message.content, str):
            return UserMessage(parts=(TextPart(message.content),), id=message.id)
        parts = (_user_part(part) for part in message.content)
        return UserMessage(parts=tuple(part for part in parts if part is not None), id=message.id)
    if isinstance(message, wire.AssistantMessage):
        assistant_parts: list[AssistantPart] = [TextPart(message.content)] if message.content else []
        for number, call in enumerate(message.tool_calls or ()):
            call_field = f"{field}.toolCalls.{number}"
            _check_embedded_json(call.function.arguments, f"{call_field}.function.arguments")
            provider_data = _provider_data(call.encrypted_value, f"{call_field}.encryptedValue")
            assistant_parts.append(ToolCallPart(call.id, call.function.name, call.function.arguments, provider_data))
        return AssistantMessage(parts=tuple(assistant_parts), id=message.id)
    if isinstance(message, wire.ToolMessage):
        content = message.content if isinstance(message.content, str) else _tool_text(message.content)
        if message.error is None:
            return ToolMessage(message.tool_call_id, content, id=message.id)
        return ToolMessage(
            message.tool_call_id,
            content or message.error,
            is_error=True,
            id=message.id,
            metadata={"error": message.error},
        )
    if isinstance(message, wire.ReasoningMessage):
        reasoning = ReasoningPart(message.content, _provider_data(message.encrypted_value, f"{field}.encryptedValue"))
        return AssistantMessage(parts=(reasoning,), id=message.id)
    if isinstance(message, wire.ActivityMessage):
        return ActivityMessage(message.activity_type, message.content, id=message.id)
    return None


_DEFAULT_MEDIA_TYPES = {
    "image": "image/*",
    "audio": "audio/*",
    "video": "video/*",
    "document": "application/octet-stream",
}


def _user_part(part: wire.TextContent | wire.MediaPart | wire.BinaryPart) -> UserPart | None:
    if isinstance(part, wire.TextContent):
        return TextPart(part.text)
    if isinstance(part, wire.BinaryPart):
        if part.data is not None:
            return FilePart(part.mime_type, f"data:{part.mime_type};base64,{part.data}", part.filename)
        if part.url is not None:
            return FilePart(part.mime_type, part.url, part.filename)
        if part.id is not None and is_file_id(part.id):
            return FilePart(part.mime_type, REFERENCE_PREFIX + part.id, part.filename)
        logger.info("skipped a binary part that names only a provider file id")
        return None
    source = part.source
    if isinstance(source, wire.DataSource):
        return FilePart(source.mime_type, f"data:{source.mime_type};base64,{source.value}")
    if isinstance(source, wire.UrlSource):
        return FilePart(source.mime_type or _guess_media_type(part.type, source.value), source.value)
    if source.provider == UPLOAD_PROVIDER or (source.provider is None and is_file_id(source.value)):
        # An upload (POST /agents/{agent}/files): the core checks it is the caller's and fills in its type.
        return FilePart(source.mime_type or _DEFAULT_MEDIA_TYPES[part.type], REFERENCE_PREFIX + source.value)
    logger.info("skipped a %s part held as a provider file handle", part.type)
    return None


def _guess_media_type(kind: str, url: str) -> str:
    """A URL source with no ``mimeType``: the type its path's extension names, if it is of this kind."""
    guessed, _ = mimetypes.guess_type(url.split("?", 1)[0].split("#", 1)[0])
    if guessed is not None and (kind == "document" or guessed.startswith(f"{kind}/")):
        return guessed
    return _DEFAULT_MEDIA_TYPES[kind]


def _tool_text(parts: list[wire.TextContent | wire.MediaPart | wire.BinaryPart]) -> str:
    """A tool result's text parts; media in a tool result has no place in the history yet."""
    if any(not isinstance(part, wire.TextContent) for part in parts):
        logger.info("kept only the text parts of a tool result")
    return "\n\n".join(part.text for part in parts if isinstance(part, wire.TextContent))


def _provider_data(encrypted_value: str | None, field: str) -> Mapping[str, Any] | None:
    if encrypted_value is None:
        return None
    try:
        restored = client_json(encrypted_value, field)
    except ValueError:
        restored = None
    return restored if isinstance(restored, dict) else {"encrypted_value": encrypted_value}


def _check_embedded_json(text: str, field: str) -> None:
    """JSON held in a string gets the body's checks; text that is not JSON is left to its reader."""
    with contextlib.suppress(ValueError):
        client_json(text, field)


def _tool(tool: wire.Tool) -> ToolDefinition:
    if tool.parameters is None:
        return ToolDefinition(tool.name, tool.description)
    return ToolDefinition(tool.name, tool.description, tool.parameters)


def _variables(request: wire.RunAgentInput) -> dict[str, Any]:
    variables: dict[str, Any] = {item.description: item.value for item in request.context}
    if isinstance(request.forwarded_props, dict):
        variables.update(request.forwarded_props)
    return variables


def _approval(entry: wire.ResumeEntry) -> ApprovalResponse:
    payload = entry.payload if isinstance(entry.payload, dict) else {}
    approved = entry.status == "resolved" and payload.get("approved") is not False
    reason = payload.get("reason")
    return ApprovalResponse(entry.interrupt_id, approved, reason if isinstance(reason, str) else "")

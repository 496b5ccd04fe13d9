"""Size limits on one request: its body, then messages, parts per message, total text, tools.

``[server] max_body_bytes`` bounds every body a route reads (``read_body``: a declared length over it is
refused at once, a streamed body as soon as it passes it, so no more than the limit is ever held).
``max_messages``, ``max_parts_per_message``, ``max_text_chars`` and ``max_tools`` bound what a client may
ask a model to read, whatever the protocol. Each refusal is a 413 naming the limit.
"""

from __future__ import annotations

from collections.abc import Callable

from starlette.requests import Request

from chatgate.config import ServerSettings
from chatgate.errors import RequestError
from chatgate.history import (
    ActivityMessage,
    AssistantMessage,
    Message,
    ReasoningPart,
    SystemMessage,
    TextPart,
    ToolCallPart,
    ToolMessage,
    UserMessage,
)
from chatgate.run_input import RunInput
from chatgate.strict_json import dump_json

__all__ = ["check_request_limits", "read_body", "read_within"]


async def read_body(request: Request, settings: ServerSettings) -> bytes:
    """The body of ``request``, refused with a 413 before more than ``[server] max_body_bytes`` is read."""
    return await read_within(request, settings.max_body_bytes, _body_too_large)


async def read_within(request: Request, limit: int, refusal: Callable[[int], RequestError]) -> bytes:
    """The body of ``request``; ``refusal(limit)`` is raised as soon as it is known to pass ``limit``."""
    declared = request.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > limit:
        raise refusal(limit)
    body = bytearray()
    async for chunk in request.stream():
        body += chunk
        if len(body) > limit:
            raise refusal(limit)
    return bytes(body)


def check_request_limits(run_input: RunInput, settings: ServerSettings) -> None:
    """Refuse ``run_input`` with a 413 naming the first ``[server]`` size limit it exceeds."""
    messages = run_input.messages
    if len(messages) > settings.max_messages:
        raise _over("max_messages", f"{len(messages)} messages", settings.max_messages)
    if len(run_input.tools) > settings.max_tools:
        raise _over("max_tools", f"{len(run_input.tools)} tools", settings.max_tools)
    total = 0
    for index, message in enumerate(messages):
        parts = _parts(message)
        if parts > settings.max_parts_per_message:
            raise _over("max_parts_per_message", f"message {index} has {parts} parts", settings.max_parts_per_message)
        total += _text_chars(message)
    if total > settings.max_text_chars:
        raise _over("max_text_chars", f"{total} characters of text", settings.max_text_chars)


def _over(limit: str, what: str, allowed: int) -> RequestError:
    return RequestError(
        413,
        "limit_exceeded",
        f"{what}: more than [server] {limit} = {allowed}",
        [{"limit": limit, "allowed": str(allowed)}],
    )


def _body_too_large(limit: int) -> RequestError:
    return RequestError(
        413,
        "body_too_large",
        f"the request body is larger than [server] max_body_bytes = {limit} bytes",
        [{"limit": "max_body_bytes", "allowed": str(limit)}],
    )


def _parts(message: Message) -> int:
    if isinstance(message, (UserMessage, AssistantMessage)):
        return len(message.parts)
    return 1


def _text_chars(message: Message) -> int:
    if isinstance(message, (SystemMessage, ToolMessage)):
        return len(message.content)
    if isinstance(message, ActivityMessage):
        return len(dump_json(message.content))
    total = 0
    for part in message.parts:
        if isinstance(part, (TextPart, ReasoningPart)):
            total += len(part.text)
        elif isinstance(part, ToolCallPart):
            total += len(part.arguments)  # files have their own limits (app/files/checks.py)
    return total

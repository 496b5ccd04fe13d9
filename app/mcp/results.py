"""An MCP tool result as chatgate's tool outcome: data for the model, never instructions.

The model reads the result as a tool message (the only place it ever goes: never a system or developer
position). Text blocks are joined; structured content is given as JSON when the server sent no text,
and to the client as the output value; an image or audio block is a line naming it in the text, and an
image in a format every provider takes (PNG, JPEG, GIF, WebP), whose base64 decodes and which fits in
the server's ``max_image_bytes`` (for all of one result's images together), also reaches the model
as the image itself (the outcome's ``images``; how each provider sends it: docs/tools.md); the client
gets the blocks themselves. A resource is named by its URI, with its text when embedded. ``isError``
makes an error outcome. The text is cut to the server's ``max_output_chars``, with a marker saying how
much was kept.
"""

from __future__ import annotations

import binascii
from base64 import b64decode
from typing import Any

from mcp import types

from chatgate.run import ToolOutcome
from chatgate.strict_json import dump_json

__all__ = ["IMAGE_TYPES", "cap", "outcome_of"]

IMAGE_TYPES = frozenset({"image/png", "image/jpeg", "image/gif", "image/webp"})
"""The image formats OpenAI-compatible, Anthropic and Ollama models all take: the ones passed on."""


def cap(text: str, limit: int) -> str:
    """``text`` cut to ``limit`` characters, with a marker when it was longer."""
    if len(text) <= limit:
        return text
    return f"{text[:limit]}\n[chatgate: output truncated: {limit} of {len(text)} characters shown]"


def _image(block: types.ImageContent, room: int, image_limit: int) -> tuple[tuple[str, str] | None, str]:
    """The image the model is to see (or None: not within ``room`` bytes), and the line naming it."""
    size = len(block.data) * 3 // 4
    if block.mime_type not in IMAGE_TYPES:
        return None, f"[image: {block.mime_type}, {size} bytes: not shown, a format models do not take]"
    if size > room:
        limit = f"over the result's {image_limit}-byte limit" if image_limit else "images are off"
        return None, f"[image: {block.mime_type}, {size} bytes: not shown, {limit}]"
    try:
        size = len(b64decode(block.data, validate=True))
    except (binascii.Error, ValueError):
        return None, f"[image: {block.mime_type}: not shown, its data is not base64]"
    return (block.mime_type, block.data), f"[image: {block.mime_type}, {size} bytes]"


def _block_text(block: types.ContentBlock) -> str:
    if isinstance(block, types.TextContent):
        return block.text
    if isinstance(block, types.AudioContent):
        return f"[audio: {block.mime_type}, {len(block.data) * 3 // 4} bytes]"
    if isinstance(block, types.ResourceLink):
        return f"[resource link: {block.uri} ({block.name})]"
    if isinstance(block, types.EmbeddedResource):
        resource = block.resource
        if isinstance(resource, types.TextResourceContents):
            return f"[resource: {resource.uri}]\n{resource.text}"
        return f"[resource: {resource.uri}, binary]"
    return f"[{getattr(block, 'type', 'unknown')} content]"


def _client_value(result: types.CallToolResult) -> Any:
    if result.structured_content is not None:
        return result.structured_content
    if all(isinstance(block, types.TextContent) for block in result.content):
        return None  # the text itself is the output
    return {"content": [block.model_dump(mode="json", by_alias=True, exclude_none=True) for block in result.content]}


def outcome_of(result: types.CallToolResult, limit: int, image_limit: int = 0) -> ToolOutcome:
    """The outcome of one call: the model's text (capped at ``limit``), images, error flag and client value.

    Images reach the model while their decoded sizes together stay within ``image_limit`` bytes (0: none
    does); the others are lines saying so.
    """
    parts: list[str] = []
    images: list[tuple[str, str]] = []
    room = image_limit  # for every image of the result together
    for block in result.content:
        if isinstance(block, types.ImageContent):
            image, line = _image(block, room, image_limit)
            parts.append(line)
            if image is not None:
                images.append(image)
                room -= len(block.data) * 3 // 4
        else:
            parts.append(_block_text(block))
    if result.structured_content is not None and not any(isinstance(b, types.TextContent) for b in result.content):
        parts.append(dump_json(result.structured_content).decode())
    text = cap("\n".join(parts) if parts else "(no output)", limit)
    value = None if result.is_error else _client_value(result)
    return ToolOutcome(text, is_error=result.is_error, value=value, images=tuple(images))

"""An MCP tool result as chatgate's tool outcome: data for the model, never instructions.

The model reads the result as a tool message (the only place it ever goes: never a system or developer
position). Text blocks are joined; structured content is given as JSON when the server sent no text,
and to the client as the output value; an image or audio block reaches the model as a line naming it
(tool messages carry text to every provider today) and the client gets the blocks themselves; a
resource is named by its URI, with its text when embedded. ``isError`` makes an error outcome. The
text is cut to the server's ``max_output_chars``, with a marker saying how much was kept.
"""

from __future__ import annotations

from typing import Any

from mcp import types

from chatgate.run import ToolOutcome
from chatgate.strict_json import dump_json

__all__ = ["cap", "outcome_of"]


def cap(text: str, limit: int) -> str:
    """``text`` cut to ``limit`` characters, with a marker when it was longer."""
    if len(text) <= limit:
        return text
    return f"{text[:limit]}\n[chatgate: output truncated: {limit} of {len(text)} characters shown]"


def _block_text(block: types.ContentBlock) -> str:
    if isinstance(block, types.TextContent):
        return block.text
    if isinstance(block, types.ImageContent):
        return f"[image: {block.mime_type}, {len(block.data) * 3 // 4} bytes]"
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


def outcome_of(result: types.CallToolResult, limit: int) -> ToolOutcome:
    """The outcome of one call: the model's text (capped at ``limit``), error flag and client value."""
    parts = [_block_text(block) for block in result.content]
    if result.structured_content is not None and not any(isinstance(b, types.TextContent) for b in result.content):
        parts.append(dump_json(result.structured_content).decode())
    text = cap("\n".join(parts) if parts else "(no output)", limit)
    value = None if result.is_error else _client_value(result)
    return ToolOutcome(text, is_error=result.is_error, value=value)

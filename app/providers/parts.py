"""What the providers' history encoders share: inline file bytes and tool-call arguments as objects."""

from __future__ import annotations

import base64
from typing import Any

from pydantic_core import from_json

from app.errors import ProviderError
from app.history import FilePart

__all__ = ["arguments_object", "inline_base64", "unsupported_file"]


def inline_base64(part: FilePart) -> str | None:
    """The base64 payload of a ``data:`` URL file, or None for a remote URL."""
    header, comma, payload = part.url.partition(",")
    if not comma or not header.startswith("data:"):
        return None
    if header.endswith(";base64"):
        return payload
    return base64.b64encode(payload.encode()).decode()


def arguments_object(arguments: str) -> dict[str, Any]:
    """A tool call's JSON arguments as the object APIs that take objects want (``{}`` when not one)."""
    try:
        value = from_json(arguments) if arguments else {}
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def unsupported_file(provider: str, part: FilePart) -> ProviderError:
    """The error for a file the provider's API cannot take in the form it came."""
    form = "inline" if part.url.startswith("data:") else "as a URL"
    return ProviderError(
        f"{provider}: cannot send a {part.media_type} file {form}",
        public_message=f"This model cannot read {part.media_type} files sent {form}.",
    )

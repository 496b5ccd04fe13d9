"""What the providers' history encoders share: tool-call arguments as objects, refusing a file."""

from __future__ import annotations

from typing import Any

from pydantic_core import from_json

from chatgate.errors import ProviderError
from chatgate.history import FilePart

__all__ = ["arguments_object", "unsupported_file"]


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

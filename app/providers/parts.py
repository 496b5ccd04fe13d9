"""What the providers share: tool-call arguments as objects, refusing a file, a cited source once per call."""

from __future__ import annotations

from typing import Any

from pydantic_core import from_json

from chatgate.errors import ProviderError
from chatgate.events import SourceCited
from chatgate.history import FilePart
from chatgate.ids import new_id

__all__ = ["arguments_object", "cite", "unsupported_file"]


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


def cite(
    cited: set[str],
    *,
    url: str | None = None,
    title: str | None = None,
    media_type: str | None = None,
    key: str | None = None,
) -> SourceCited | None:
    """A ``SourceCited`` for a web page (``url``) or a document (``media_type``), or None when already cited.

    ``cited`` holds the keys (the URL, or ``key`` for a document) this model call has reported.
    """
    seen = key or url
    if not seen or seen in cited:
        return None
    cited.add(seen)
    if url is not None:
        return SourceCited(new_id("src"), url=url, title=title or None)
    return SourceCited(new_id("src"), title=title or "Document", media_type=media_type or "text/plain")

"""File references in a conversation: how a message names an upload, and how it becomes bytes for a model.

A reference is a ``FilePart`` whose URL names an upload instead of carrying it:

- ``chatgate-file:{id}``: what the AG-UI adapter decodes a ``FileSource {type: "file", value: id}`` into
  (the agent is not known to a decoder);
- ``/agents/{agent}/files/{id}``, alone or after any ``http(s)://host[/prefix]``: the upload's own URL,
  as ``POST .../files`` returned it, which a useChat file part carries.

``resolve_references`` turns each into the canonical path form (``file_path``) with the upload's media
type and name when a request arrives, refusing an id the caller has none of (404, as a thread). The
history keeps that path, never the bytes; ``FileInliner`` replaces it with a ``data:`` URL only in what a
model call sends, so every provider gets the bytes inline.
"""

from __future__ import annotations

import base64
import re
from dataclasses import replace
from urllib.parse import urlsplit

from chatgate.errors import RequestError
from chatgate.files_store.store import FileStore
from chatgate.history import FilePart, Message, TextPart, UserMessage, UserPart

__all__ = [
    "REFERENCE_PREFIX",
    "UPLOAD_PROVIDER",
    "FileInliner",
    "file_path",
    "is_file_id",
    "referenced_file",
    "resolve_references",
]

REFERENCE_PREFIX = "chatgate-file:"
"""A reference by id alone (an AG-UI ``FileSource``), before the request's agent is known."""

UPLOAD_PROVIDER = "chatgate"
"""The ``provider`` of an AG-UI ``FileSource`` that names an upload (it may also be left out)."""

_FILE_ID = r"file_[0-9a-f]{24}"
_PATH = re.compile(rf"/agents/([A-Za-z0-9][A-Za-z0-9_.-]*)/files/({_FILE_ID})")


def is_file_id(value: str) -> bool:
    """Whether ``value`` has the form of an upload's id (``file_`` and 24 hex digits)."""
    return re.fullmatch(_FILE_ID, value) is not None


def file_path(agent: str, file_id: str) -> str:
    """The upload's URL path, which a stored history keeps: ``/agents/{agent}/files/{id}``."""
    return f"/agents/{agent}/files/{file_id}"


def referenced_file(url: str) -> tuple[str | None, str] | None:
    """``(agent or None, file id)`` when ``url`` is a reference to an upload, else None."""
    if url.startswith(REFERENCE_PREFIX):  # whatever follows: an id of no upload is a 404, not a bad URL
        return None, url.removeprefix(REFERENCE_PREFIX)
    if not url.startswith(("/", "http://", "https://")):
        return None
    try:
        path = urlsplit(url).path
    except ValueError:
        return None
    found = _PATH.search(path)
    if found is None or found.end() != len(path):
        return None
    return found.group(1), found.group(2)


async def resolve_references(
    messages: tuple[Message, ...], files: FileStore | None, owner: str, agent: str
) -> tuple[Message, ...]:
    """``messages`` with every reference made canonical; 404 for an upload this owner has none of on ``agent``."""
    if not any(_references(message) for message in messages):
        return messages
    if files is None:
        raise RequestError(422, "no_file_store", "file references need a store: set [store] url")
    known: dict[str, FilePart] = {}
    resolved: list[Message] = []
    for message in messages:
        if not isinstance(message, UserMessage) or not _references(message):
            resolved.append(message)
            continue
        parts: list[UserPart] = []
        for part in message.parts:
            reference = referenced_file(part.url) if isinstance(part, FilePart) else None
            if reference is None:
                parts.append(part)
                continue
            named_agent, file_id = reference
            canonical = known.get(file_id)
            if canonical is None:
                mine = named_agent in (None, agent) and is_file_id(file_id)
                record = await files.describe(owner, agent, file_id) if mine else None
                if record is None:
                    raise RequestError(404, "unknown_file", f"message {message.id!r}: no file {file_id[:80]!r} here")
                canonical = known[file_id] = FilePart(record.media_type, file_path(agent, file_id), record.name)
            assert isinstance(part, FilePart)
            parts.append(replace(canonical, filename=part.filename or canonical.filename))
        resolved.append(replace(message, parts=tuple(parts)))
    return tuple(resolved)


def _references(message: Message) -> bool:
    return isinstance(message, UserMessage) and any(
        isinstance(part, FilePart) and referenced_file(part.url) is not None for part in message.parts
    )


class FileInliner:
    """Puts an upload's bytes in place of its reference, in what one run's model calls send.

    One per request: the bytes of each file are read once however many steps the run takes. A file
    deleted since the turn that attached it becomes a short text saying so.
    """

    def __init__(self, files: FileStore, owner: str, agent: str) -> None:
        self._files = files
        self._owner = owner
        self._agent = agent
        self._inline: dict[str, UserPart] = {}

    async def inline(self, messages: tuple[Message, ...]) -> tuple[Message, ...]:
        """``messages`` with this agent's references replaced by ``data:`` URLs (the same tuple when none)."""
        if not any(_references(message) for message in messages):
            return messages
        out: list[Message] = []
        for message in messages:
            if isinstance(message, UserMessage) and _references(message):
                message = replace(message, parts=tuple([await self._part(part) for part in message.parts]))
            out.append(message)
        return tuple(out)

    async def _part(self, part: UserPart) -> UserPart:
        reference = referenced_file(part.url) if isinstance(part, FilePart) else None
        if reference is None or reference[0] != self._agent:
            return part
        file_id = reference[1]
        inline = self._inline.get(file_id)
        if inline is None:
            stored = await self._files.get(self._owner, self._agent, file_id)
            if stored is None:
                name = (part.filename if isinstance(part, FilePart) else None) or file_id
                inline = TextPart(f"[The attached file {name!r} is no longer available.]")
            else:
                data = base64.b64encode(stored.data).decode()
                media_type = stored.record.media_type
                inline = FilePart(media_type, f"data:{media_type};base64,{data}", stored.record.name)
            self._inline[file_id] = inline
        if isinstance(inline, FilePart) and isinstance(part, FilePart) and part.filename:
            return replace(inline, filename=part.filename)
        return inline

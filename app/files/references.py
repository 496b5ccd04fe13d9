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
from collections.abc import Mapping
from dataclasses import replace
from urllib.parse import urlsplit

from chatgate.errors import RequestError
from chatgate.files.store import FileRecord, FileStore
from chatgate.history import FilePart, Message, TextPart, UserMessage, UserPart

__all__ = [
    "REFERENCE_PREFIX",
    "UPLOAD_PROVIDER",
    "FileInliner",
    "file_path",
    "inline_plan",
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
    messages: tuple[Message, ...], files: FileStore | None, owner: str, agent: str, *, inline_limit: int
) -> tuple[Message, ...]:
    """``messages`` with every reference made canonical; 404 for an upload this owner has none of on ``agent``.

    413 ``inline_limit_exceeded`` when the newest user message's references alone carry more than
    ``inline_limit`` bytes (``[files] max_inline_bytes_per_call``), known from the stored sizes.
    """
    if not any(_references(message) for message in messages):
        return messages
    if files is None:
        raise RequestError(422, "no_file_store", "file references need a store: set [store] url")
    known: dict[str, FilePart] = {}
    sizes: dict[str, int] = {}
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
                sizes[file_id] = record.size
            assert isinstance(part, FilePart)
            parts.append(replace(canonical, filename=part.filename or canonical.filename))
        resolved.append(replace(message, parts=tuple(parts)))
    inline_plan(tuple(resolved), agent, sizes, inline_limit)
    return tuple(resolved)


def _references(message: Message) -> bool:
    return isinstance(message, UserMessage) and any(
        isinstance(part, FilePart) and referenced_file(part.url) is not None for part in message.parts
    )


def _agent_references(message: Message, agent: str) -> list[tuple[int, str]]:
    """``(part index, file id)`` of each of ``agent``'s uploads ``message`` refers to, in order."""
    if not isinstance(message, UserMessage):
        return []
    found = []
    for index, part in enumerate(message.parts):
        reference = referenced_file(part.url) if isinstance(part, FilePart) else None
        if reference is not None and reference[0] == agent:
            found.append((index, reference[1]))
    return found


def inline_plan(
    messages: tuple[Message, ...], agent: str, sizes: Mapping[str, int], limit: int
) -> set[tuple[int, int]]:
    """The references one model call inlines, as ``(message index, part index)``: the newest while they fit.

    Every reference counts its file's size (``sizes``; a file missing from it counts nothing), the same
    file referenced twice counting twice. The newest user message's references must all fit, else 413
    ``inline_limit_exceeded``; older ones are taken newest first until one does not fit, and it and
    every older one are left out.
    """
    newest = next((i for i in reversed(range(len(messages))) if isinstance(messages[i], UserMessage)), None)
    if newest is None:
        return set()
    own = sum(sizes.get(file_id, 0) for _, file_id in _agent_references(messages[newest], agent))
    if own > limit:
        raise RequestError(
            413,
            "inline_limit_exceeded",
            f"message {messages[newest].id!r}: its file references total {own} bytes, more than the {limit} bytes"
            " of files one model call may carry ([files] max_inline_bytes_per_call; each reference counts)",
            [{"limit": "max_inline_bytes_per_call", "allowed": str(limit)}],
        )
    chosen: set[tuple[int, int]] = set()
    total = 0
    for message_index in reversed(range(newest + 1)):
        for part_index, file_id in reversed(_agent_references(messages[message_index], agent)):
            total += sizes.get(file_id, 0)
            if total > limit:
                return chosen
            chosen.add((message_index, part_index))
    return chosen


class FileInliner:
    """Puts an upload's bytes in place of its reference, in what one run's model calls send.

    One per request: the bytes of each file are read once however many steps the run takes, and only
    for the references ``inline_plan`` keeps within ``limit`` (decided from the stored sizes, before any
    byte is read); an older reference left out becomes a short text saying so, as does a file deleted
    since the turn that attached it.
    """

    def __init__(self, files: FileStore, owner: str, agent: str, limit: int) -> None:
        self._files = files
        self._owner = owner
        self._agent = agent
        self._limit = limit
        self._records: dict[str, FileRecord | None] = {}
        self._inline: dict[str, UserPart] = {}

    async def inline(self, messages: tuple[Message, ...]) -> tuple[Message, ...]:
        """``messages`` with this agent's references replaced by ``data:`` URLs (the same tuple when none)."""
        referenced = {file_id for message in messages for _, file_id in _agent_references(message, self._agent)}
        if not referenced:
            return messages
        unknown = referenced - self._records.keys()
        if unknown:
            found = await self._files.describe_many(self._owner, self._agent, unknown)
            self._records.update({file_id: found.get(file_id) for file_id in unknown})
        sizes = {file_id: record.size for file_id, record in self._records.items() if record is not None}
        chosen = inline_plan(messages, self._agent, sizes, self._limit)
        out: list[Message] = []
        for message_index, message in enumerate(messages):
            references = _agent_references(message, self._agent)
            if references:
                assert isinstance(message, UserMessage)
                parts = list(message.parts)
                for part_index, file_id in references:
                    inlined = (message_index, part_index) in chosen
                    parts[part_index] = await self._part(parts[part_index], file_id, inlined)
                message = replace(message, parts=tuple(parts))
            out.append(message)
        return tuple(out)

    async def _part(self, part: UserPart, file_id: str, inlined: bool) -> UserPart:
        assert isinstance(part, FilePart)
        name = part.filename or file_id
        if self._records.get(file_id) is None:
            return _gone(name)
        if not inlined:
            return TextPart(f"[The attached file {name!r} is left out here: newer attachments fill this request.]")
        inline = self._inline.get(file_id)
        if inline is None:
            stored = await self._files.get(self._owner, self._agent, file_id)
            if stored is None:
                inline = _gone(name)
            else:
                data = base64.b64encode(stored.data).decode()
                media_type = stored.record.media_type
                inline = FilePart(media_type, f"data:{media_type};base64,{data}", stored.record.name)
            self._inline[file_id] = inline
        if isinstance(inline, FilePart) and part.filename:
            return replace(inline, filename=part.filename)
        return inline


def _gone(name: str) -> TextPart:
    return TextPart(f"[The attached file {name!r} is no longer available.]")

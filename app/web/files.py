"""The HTTP routes of uploads, under ``/agents/{agent}/files`` (app/files/, docs/files.md).

- ``POST .../files``: one file, as ``multipart/form-data`` (one file field) or as the raw body with its
  ``content-type`` (``?name=`` names it); answers 201 ``{id, url, mediaType, size, name}``;
- ``GET .../files``: the caller's uploads on the agent, newest first;
- ``GET .../files/{id}``: the bytes, as an attachment; ``DELETE .../files/{id}``: removes it.

Uploads are the caller's own (``Caller.owner``), like threads: another owner's id is a 404. ``[files]
max_bytes`` bounds a file (413) and ``allowed_types`` its media type (415; an RFC 9110 ``type/subtype``,
else 415 ``invalid_media_type``). An upload streams into a spooled temporary file, never whole in
memory, and the uploads in flight are bounded (``UploadSlots``). They need a store: without one every
route answers 501 ``no_file_store``.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator
from datetime import UTC, datetime
from functools import partial
from pathlib import PurePosixPath, PureWindowsPath
from tempfile import SpooledTemporaryFile
from typing import IO, Any
from urllib.parse import quote

from starlette.datastructures import UploadFile
from starlette.formparsers import MultiPartException, MultiPartParser
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Route

from chatgate.access import resolve_agent
from chatgate.caller import caller_of
from chatgate.config import FilesSettings
from chatgate.errors import RequestError
from chatgate.files import FileRecord, FileStore, file_path, is_file_id
from chatgate.media_types import media_type_essence
from chatgate.web.openapi import OPERATIONS, Operation
from chatgate.web.services import running_of
from chatgate.web.upload_slots import UploadSlots

__all__ = ["file_routes"]

_BASE = "/agents/{agent}/files"
SPOOL_BYTES = 1024 * 1024
"""How much of an upload is held in memory before the rest goes to a temporary file (as Starlette's multipart)."""
_MULTIPART_SLACK = 16 * 1024
"""What a multipart body may hold beyond the file: its boundaries and part headers."""
_MAX_NAME = 255
_FILE_JSON = {"application/json": {"schema": {"type": "object"}}}

OPERATIONS[("POST", _BASE)] = Operation(
    "Upload one file (multipart/form-data with one file field, or the raw body with its content-type and"
    " ?name=); [files] max_bytes (413), allowed_types and an RFC 9110 media type (415), and the uploads in"
    " flight (429 per key, 503 per process, with Retry-After) apply",
    {"201": {"description": "{id, url, mediaType, size, name, createdAt}", "content": _FILE_JSON}},
)
OPERATIONS[("GET", _BASE)] = Operation("The caller's uploads on the agent, newest first")
OPERATIONS[("GET", _BASE + "/{file_id}")] = Operation(
    "The caller's upload, as an attachment",
    {"200": {"description": "the file's bytes, with its media type", "content": {"*/*": {"schema": {}}}}},
)
OPERATIONS[("DELETE", _BASE + "/{file_id}")] = Operation(
    "Remove the caller's upload", {"204": {"description": "removed"}}
)


def file_routes() -> list[BaseRoute]:
    """The upload routes; the uploads they receive at once are bounded by ``[files]`` (``UploadSlots``)."""
    return [
        Route(_BASE, partial(_upload, UploadSlots()), methods=["POST"]),
        Route(_BASE, _list, methods=["GET"]),
        Route(_BASE + "/{file_id}", _download, methods=["GET"]),
        Route(_BASE + "/{file_id}", _delete, methods=["DELETE"]),
    ]


def _context(request: Request) -> tuple[str, str, FileStore, FilesSettings]:
    """The agent's name, the caller's owner, the file store and ``[files]``; refusals as 4xx/501."""
    running = running_of(request)
    registry = running.agents
    caller = caller_of(request)
    agent = resolve_agent(registry, request.path_params["agent"], caller)
    files = running.files
    if files is None:
        raise RequestError(501, "no_file_store", "uploads need a store: set [store] url and restart the server")
    return agent.name, caller.owner, files, registry.config.files


def _file_id(request: Request) -> str:
    file_id: str = request.path_params["file_id"]
    if not is_file_id(file_id):
        raise _unknown(file_id)
    return file_id


def _unknown(file_id: str) -> RequestError:
    return RequestError(404, "unknown_file", f"no file {file_id!r} here")


def _describe(agent: str, record: FileRecord) -> dict[str, Any]:
    return {
        "id": record.id,
        "url": file_path(agent, record.id),
        "mediaType": record.media_type,
        "size": record.size,
        "name": record.name,
        "createdAt": datetime.fromtimestamp(record.created_at, UTC).isoformat().replace("+00:00", "Z"),
    }


async def _upload(slots: UploadSlots, request: Request) -> Response:
    agent, owner, files, settings = _context(request)
    media_type = _declared_type(request.headers.get("content-type", ""))
    with slots.hold(caller_of(request).limits_id, settings):  # refused before any byte of the body is read
        if media_type == "multipart/form-data":
            record = await _keep_multipart(request, files, owner, agent, settings)
        else:
            _check_allowed(media_type, settings)
            with SpooledTemporaryFile(max_size=SPOOL_BYTES) as spooled:
                size = await _spool(request, spooled, settings)
                _check_size(size, settings)
                name = _clean_name(request.query_params.get("name"))
                record = await files.put(owner, agent, media_type, name, spooled, size)
    return JSONResponse(_describe(agent, record), status_code=201)


async def _list(request: Request) -> Response:
    agent, owner, files, _ = _context(request)
    return JSONResponse({"files": [_describe(agent, record) for record in await files.list(owner, agent)]})


async def _download(request: Request) -> Response:
    agent, owner, files, _ = _context(request)
    file_id = _file_id(request)
    stored = await files.get(owner, agent, file_id)
    if stored is None:
        raise _unknown(file_id)
    name = stored.record.name or file_id
    return Response(
        stored.data,
        media_type=stored.record.media_type,
        headers={
            # Served as a download, never rendered on this origin: an upload is whatever its owner sent.
            "content-disposition": f"attachment; filename*=UTF-8''{quote(name, safe='')}",
            "x-content-type-options": "nosniff",
            "content-security-policy": "sandbox",
            "cache-control": "private, no-store",
        },
    )


async def _delete(request: Request) -> Response:
    agent, owner, files, _ = _context(request)
    file_id = _file_id(request)
    if not await files.delete(owner, agent, file_id):
        raise _unknown(file_id)
    return Response(status_code=204)


def _too_large(settings: FilesSettings) -> RequestError:
    return RequestError(
        413,
        "file_too_large",
        f"the file is larger than [files] max_bytes = {settings.max_bytes} bytes",
        [{"limit": "max_bytes", "allowed": str(settings.max_bytes)}],
    )


def _declared_type(content_type: str) -> str:
    """The body's media type (``type/subtype``); 415 when there is none or it is no media type."""
    if not content_type.strip():
        raise RequestError(
            415, "unsupported_media_type", "send the file as multipart/form-data or as the body with its content-type"
        )
    return _parsed_type(content_type, "the content-type")


def _parsed_type(value: str, where: str) -> str:
    media_type = media_type_essence(value)
    if media_type is None:
        raise RequestError(
            415,
            "invalid_media_type",
            f"{where} {value[:100]!r} is not a media type: type/subtype (RFC 9110), no lists or control characters",
        )
    return media_type


def _check_allowed(media_type: str, settings: FilesSettings) -> None:
    if not settings.allows(media_type):
        allowed = ", ".join(settings.allowed_types) or "none"
        raise RequestError(
            415, "unsupported_file_type", f"files of type {media_type!r} are not accepted here (allowed: {allowed})"
        )


def _check_size(size: int, settings: FilesSettings) -> None:
    if size > settings.max_bytes:
        raise _too_large(settings)
    if not size:
        raise RequestError(422, "empty_file", "the file is empty")


async def _spool(request: Request, spooled: IO[bytes], settings: FilesSettings) -> int:
    """Write the body to ``spooled``; its size. 413 as soon as it is known to pass ``[files] max_bytes``."""
    size = 0
    async for chunk in _within(request, settings.max_bytes, settings):
        spooled.write(chunk)
        size += len(chunk)
    return size


async def _within(request: Request, limit: int, settings: FilesSettings) -> AsyncGenerator[bytes, None]:
    """The body's chunks; 413 on a declared length over ``limit``, or once more than it has arrived."""
    declared = request.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > limit:
        raise _too_large(settings)
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            raise _too_large(settings)
        yield chunk


async def _keep_multipart(
    request: Request, files: FileStore, owner: str, agent: str, settings: FilesSettings
) -> FileRecord:
    """Keep the one file a multipart body holds, spooled to disk as it streams in; 4xx when it is not that."""
    body = _within(request, settings.max_bytes + _MULTIPART_SLACK, settings)
    parser = MultiPartParser(request.headers, body, max_files=1, max_fields=16)
    try:
        form = await parser.parse()
    except MultiPartException as exc:
        raise RequestError(422, "invalid_multipart", f"the multipart body is invalid: {exc.message}") from None
    try:
        uploads = [value for _, value in form.multi_items() if isinstance(value, UploadFile)]
        if len(uploads) != 1:
            raise RequestError(422, "invalid_multipart", "the multipart body must hold exactly one file field")
        upload = uploads[0]
        part_type = upload.headers.get("content-type")
        media_type = "application/octet-stream" if part_type is None else _parsed_type(part_type, "the file's type")
        _check_allowed(media_type, settings)
        size = upload.size or 0
        _check_size(size, settings)
        return await files.put(owner, agent, media_type, _clean_name(upload.filename), upload.file, size)
    finally:
        await form.close()


def _clean_name(name: str | None) -> str | None:
    """The file name without any directory, control characters or excess length; None when nothing is left."""
    if not name:
        return None
    base = PureWindowsPath(PurePosixPath(name).name).name
    cleaned = "".join(ch for ch in base if ch.isprintable())[:_MAX_NAME].strip()
    return cleaned or None

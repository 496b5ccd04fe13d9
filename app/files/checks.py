"""Checks on the files and images users attach, before anything reaches a model.

A file is a ``data:`` URL (its bytes inline) or a remote URL the provider fetches. Only the URL schemes
the operator allows pass (``[server] file_url_schemes``, default ``data`` and ``https``), and an inline
file may not be larger than ``[server] max_file_bytes``; anything else is refused with a 4xx naming the
message and the problem.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from chatgate.config import ServerSettings
from chatgate.data_urls import data_url_bytes
from chatgate.errors import RequestError
from chatgate.history import FilePart, Message, UserMessage

__all__ = ["check_files"]


def check_files(
    messages: Iterable[Message], settings: ServerSettings, *, is_reference: Callable[[str], bool] | None = None
) -> None:
    """Refuse any user file whose URL scheme is not allowed or whose inline bytes are too many.

    ``is_reference`` names the URLs of uploads a request's references were resolved to
    (``references.py``): they are checked there, not here.
    """
    for message in messages:
        if not isinstance(message, UserMessage):
            continue
        for part in message.parts:
            if isinstance(part, FilePart) and not (is_reference is not None and is_reference(part.url)):
                _check(part, message.id, settings)


def _check(part: FilePart, message_id: str, settings: ServerSettings) -> None:
    where = f"message {message_id!r}: file {part.filename or part.media_type!r}"
    scheme = part.url.partition(":")[0].lower()
    if scheme not in settings.file_url_schemes:
        allowed = ", ".join(f"{s}:" for s in settings.file_url_schemes)
        raise RequestError(
            422, "file_url_not_allowed", f"{where}: URL scheme {scheme + ':'!r} is not allowed ({allowed})"
        )
    if scheme != "data":
        return
    # A base64 payload decodes to three quarters of its length: refuse before decoding a huge one.
    if len(part.url.partition(",")[2]) * 3 // 4 > settings.max_file_bytes + 2:
        raise _too_large(where, settings)
    try:
        size = len(data_url_bytes(part.url))
    except ValueError as exc:
        raise RequestError(422, "invalid_file", f"{where}: {exc}") from None
    if size > settings.max_file_bytes:
        raise _too_large(where, settings)


def _too_large(where: str, settings: ServerSettings) -> RequestError:
    return RequestError(413, "file_too_large", f"{where} is larger than the limit of {settings.max_file_bytes} bytes")

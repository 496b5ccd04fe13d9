"""Reading an upstream's streamed body: SSE messages and NDJSON objects, however frames are split across reads.

A body that breaks its own wire format ends the model call with ``malformed``'s error.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

from pydantic_core import from_json

from chatgate.errors import ProviderError

__all__ = ["INTERRUPTED", "malformed", "ndjson_objects", "parse_json", "sse_messages"]

INTERRUPTED = "The model stream was interrupted."


def malformed(upstream: str, what: str) -> ProviderError:
    """The error for an upstream stream that breaks its own wire format."""
    return ProviderError(f"{upstream}: malformed stream: {what}", public_message=INTERRUPTED, kind="interrupted")


_LF = ord("\n")
_CR = ord("\r")  # ``13 in chunk`` is a memchr; ``b"\r" in chunk`` costs ~7x more per upstream read


async def sse_messages(chunks: AsyncIterator[bytes]) -> AsyncIterator[tuple[str, bytes]]:
    """``(event, data)`` for each server-sent event in ``chunks``; comments and ``id``/``retry`` ignored.

    Lines may end in LF, CRLF or CR and split anywhere across chunks. ``event`` is ``""`` when the
    message names none. A message not ended by a blank line when the stream stops is dropped, as the
    SSE spec says; the decoder notices the missing end of its own protocol.
    """
    buffer = b""
    event = ""
    data: list[bytes] = []
    async for chunk in chunks:
        if buffer:
            chunk = buffer + chunk
        elif not data and not event:
            whole = _whole_message(chunk)
            if whole is not None:
                yield whole
                continue
        if _CR in chunk:
            held = chunk.endswith(b"\r")  # maybe the first half of a CRLF
            if held:
                chunk = chunk[:-1]
            chunk = chunk.replace(b"\r\n", b"\n").replace(b"\r", b"\n")
            lines = chunk.split(b"\n")
            buffer = lines.pop() + (b"\r" if held else b"")
        else:
            lines = chunk.split(b"\n")
            buffer = lines.pop()
        for line in lines:
            if not line:
                if data:
                    yield event, data[0] if len(data) == 1 else b"\n".join(data)
                    data = []
                event = ""
            elif line.startswith(b"data: "):  # the usual form: one slice, not two
                data.append(line[6:])
            elif line.startswith(b"data:"):
                data.append(line[5:])
            elif line.startswith(b"event:"):
                event = line[6:].strip().decode("utf-8", "replace")
            # anything else is a comment (":"), id:, retry: or an unknown field: all ignored
    if buffer == b"\r" and data:  # the stream's last byte ended the message's blank line
        yield event, b"\n".join(data)


def _whole_message(chunk: bytes) -> tuple[str, bytes] | None:
    """The message when ``chunk`` is exactly one: a ``data: `` line, maybe after an ``event: `` line, then a blank one.

    That is the usual read of a token stream (OpenAI-compatible servers send the first form, Anthropic
    the second), and taking it whole skips splitting it into lines: 0.55 µs a read instead of 1.2.
    """
    if not chunk.endswith(b"\n\n") or _CR in chunk:
        return None
    lines = chunk.count(_LF)
    if lines == 2 and chunk.startswith(b"data: "):
        return "", chunk[6:-2]
    if lines == 3 and chunk.startswith(b"event: "):
        end = chunk.index(b"\n")
        if chunk.startswith(b"data: ", end + 1):
            return chunk[6:end].strip().decode("utf-8", "replace"), chunk[end + 7 : -2]
    return None


async def ndjson_objects(chunks: AsyncIterator[bytes], upstream: str) -> AsyncIterator[Any]:
    """Each JSON value of a newline-delimited JSON body, with lines split anywhere across chunks."""
    buffer = b""
    async for chunk in chunks:
        lines = (buffer + chunk if buffer else chunk).split(b"\n")
        buffer = lines.pop()
        for line in lines:
            if line.strip():
                yield parse_json(line, upstream)
    if buffer.strip():
        yield parse_json(buffer, upstream)


def parse_json(data: bytes, upstream: str) -> Any:
    """``data`` parsed as JSON, or the malformed-stream error naming a bit of it."""
    try:
        return from_json(data)
    except ValueError:
        raise malformed(upstream, f"not JSON: {data[:200]!r}") from None

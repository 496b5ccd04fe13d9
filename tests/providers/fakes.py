"""Fake upstream model servers: raw HTTP/1.1 on 127.0.0.1, scripted byte by byte.

A ``FakeUpstream`` answers each request with the next ``Reply`` (the last one repeats; a subclass may
choose it from the request instead, ``reply_to``): a status, then body pieces written one by one
(``bytes`` is one write, a ``float`` a pause, a ``threading.Event`` a wait until the test sets it), then
the end the reply asks for: a complete chunked body, a connection cut mid-body, or silence. A body sent
without ``content-type: application/json`` gets a 415 instead, as from Anthropic's API, which requires
it. It records every request's path, headers and JSON body, and when each connection was closed by the
client.

The helpers below build each provider's exact wire frames.
"""

from __future__ import annotations

import asyncio
import json
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any, Literal

__all__ = [
    "FakeUpstream",
    "Recorded",
    "Reply",
    "anthropic_event",
    "fake_in_thread",
    "ndjson",
    "openai_chunk",
    "openai_usage",
    "sse_data",
    "text_reply",
]

Ending = Literal["complete", "cut", "silent"]


GATE_POLL_SECONDS = 0.02


@dataclass
class Reply:
    """One scripted answer."""

    body: Sequence[bytes | float | threading.Event] = field(default_factory=list)
    status: int = 200
    headers: dict[str, str] = field(default_factory=lambda: {"content-type": "text/event-stream"})
    ending: Ending = "complete"


@dataclass
class Recorded:
    """One request the fake received."""

    method: str
    path: str
    headers: dict[str, str]
    body: Any
    raw: bytes = b""
    head: str = ""


class FakeUpstream:
    """A scripted HTTP server. Use ``async with FakeUpstream(replies) as fake`` and ``fake.url``."""

    def __init__(self, *replies: Reply) -> None:
        self.replies = list(replies)
        self.requests: list[Recorded] = []
        self.closed_at: list[float] = []  # time.monotonic() when a client closed a connection
        self.connections = 0
        self._served = 0
        self._server: asyncio.Server | None = None
        self._tasks: set[asyncio.Task[None]] = set()

    @property
    def url(self) -> str:
        assert self._server is not None
        port = self._server.sockets[0].getsockname()[1]
        return f"http://127.0.0.1:{port}"

    @property
    def open_connections(self) -> int:
        """Connections a client holds open to the fake right now."""
        return len(self._tasks)

    @property
    def bodies(self) -> list[Any]:
        return [request.body for request in self.requests]

    async def __aenter__(self) -> FakeUpstream:
        self._server = await asyncio.start_server(self._connection, "127.0.0.1", 0)
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        assert self._server is not None
        self._server.close()
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        await self._server.wait_closed()

    async def wait_closed(self, timeout: float) -> float:
        """Wait until a client closed a connection; returns when (``time.monotonic()``)."""
        deadline = time.monotonic() + timeout
        while not self.closed_at and time.monotonic() < deadline:
            await asyncio.sleep(0.01)
        assert self.closed_at, "the client never closed its connection"
        return self.closed_at[0]

    async def reply_to(self, request: Recorded) -> Reply:
        """The next scripted reply; a subclass may answer from the request instead (or make it wait)."""
        reply = self.replies[min(self._served, len(self.replies) - 1)]
        self._served += 1
        return reply

    async def _connection(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._tasks.add(task)
        self.connections += 1
        try:
            while await self._exchange(reader, writer):
                pass
        except (ConnectionError, asyncio.IncompleteReadError):
            self.closed_at.append(time.monotonic())
        except asyncio.CancelledError:
            pass  # the fake is shutting down
        finally:
            writer.close()
            self._tasks.discard(task)

    async def _exchange(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> bool:
        """Serve one request; False when the connection is over."""
        head = await reader.readuntil(b"\r\n\r\n")
        request_line, *header_lines = head.decode("latin-1").split("\r\n")[:-2]
        method, path, _ = request_line.split(" ", 2)
        headers = {name.lower(): value.strip() for name, value in (line.split(":", 1) for line in header_lines)}
        raw = await reader.readexactly(int(headers.get("content-length", "0")))
        body = json.loads(raw) if raw else None
        recorded = Recorded(method, path, headers, body, raw, head.decode("latin-1"))
        self.requests.append(recorded)
        if raw and headers.get("content-type", "").split(";")[0].strip() != "application/json":
            reply = _UNSUPPORTED_MEDIA_TYPE  # as strict as Anthropic's API, which requires the header
        else:
            reply = await self.reply_to(recorded)

        hangup = asyncio.ensure_future(reader.read(1))  # b"" once the client closes
        hangup.add_done_callback(lambda read: read.cancelled() or read.exception())  # a reset is a hangup too
        status_line = f"HTTP/1.1 {reply.status} Fake\r\n"
        header_text = "".join(f"{name}: {value}\r\n" for name, value in reply.headers.items())
        writer.write((status_line + header_text + "transfer-encoding: chunked\r\n\r\n").encode("latin-1"))
        await writer.drain()
        for piece in reply.body:
            if hangup.done():
                break
            if isinstance(piece, float):
                await asyncio.wait([hangup], timeout=piece)
                continue
            if isinstance(piece, threading.Event):
                while not piece.is_set() and not hangup.done():
                    await asyncio.wait([hangup], timeout=GATE_POLL_SECONDS)
                continue
            writer.write(b"%x\r\n%s\r\n" % (len(piece), piece))
            await writer.drain()
        if reply.ending == "silent" or hangup.done():
            await hangup
            self.closed_at.append(time.monotonic())
            return False
        hangup.cancel()
        await asyncio.wait([hangup])  # its read is over before the next request's is started
        if reply.ending == "cut":
            return False
        writer.write(b"0\r\n\r\n")
        await writer.drain()
        return True


_UNSUPPORTED_MEDIA_TYPE = Reply(
    [b'{"error": {"message": "content-type must be application/json"}}'],
    status=415,
    headers={"content-type": "application/json"},
)


@contextmanager
def fake_in_thread(*replies: Reply, fake: FakeUpstream | None = None) -> Iterator[FakeUpstream]:
    """A ``FakeUpstream`` (``fake``, or one of ``replies``) on its own event loop thread, for tests that block."""
    fake = fake if fake is not None else FakeUpstream(*replies)
    loop = asyncio.new_event_loop()
    ready = threading.Event()
    stop = asyncio.Event()

    async def main() -> None:
        async with fake:
            ready.set()
            await stop.wait()

    thread = threading.Thread(target=loop.run_until_complete, args=(main(),), daemon=True)
    thread.start()
    assert ready.wait(10), "the fake upstream did not start"
    try:
        yield fake
    finally:
        loop.call_soon_threadsafe(stop.set)
        thread.join(10)
        loop.close()


def sse_data(payload: Any) -> bytes:
    """``data: <json>`` and a blank line."""
    return b"data: " + json.dumps(payload).encode() + b"\n\n"


def openai_chunk(delta: dict[str, Any] | None = None, finish_reason: str | None = None) -> bytes:
    """One Chat Completions chunk frame."""
    choice = {"index": 0, "delta": delta or {}, "finish_reason": finish_reason}
    return sse_data({"id": "chatcmpl-1", "object": "chat.completion.chunk", "model": "m", "choices": [choice]})


def openai_usage(prompt: int, completion: int, *, cached: int | None = None, reasoning: int | None = None) -> bytes:
    """The include_usage chunk: no choices, just usage (with the cached and reasoning details when given)."""
    usage: dict[str, Any] = {"prompt_tokens": prompt, "completion_tokens": completion}
    usage["total_tokens"] = prompt + completion
    if cached is not None:
        usage["prompt_tokens_details"] = {"cached_tokens": cached}
    if reasoning is not None:
        usage["completion_tokens_details"] = {"reasoning_tokens": reasoning}
    return sse_data({"id": "chatcmpl-1", "object": "chat.completion.chunk", "choices": [], "usage": usage})


def anthropic_event(kind: str, **fields: Any) -> bytes:
    """One Messages stream event: ``event: kind`` then its data."""
    return f"event: {kind}\n".encode() + sse_data({"type": kind, **fields})


def ndjson(payload: Any) -> bytes:
    """One NDJSON line."""
    return json.dumps(payload).encode() + b"\n"


def text_reply(kind: str, text: str) -> Reply:
    """A whole answer of ``text`` in the wire format of provider ``kind`` (openai, anthropic or ollama)."""
    if kind == "openai":
        return Reply(
            [openai_chunk({"content": text}), openai_chunk({}, "stop"), openai_usage(5, 2), b"data: [DONE]\n\n"]
        )
    if kind == "anthropic":
        block = {"type": "text", "text": ""}
        return Reply(
            [
                anthropic_event("message_start", message={"id": "msg_1", "usage": {"input_tokens": 5}}),
                anthropic_event("content_block_start", index=0, content_block=block),
                anthropic_event("content_block_delta", index=0, delta={"type": "text_delta", "text": text}),
                anthropic_event("content_block_stop", index=0),
                anthropic_event("message_delta", delta={"stop_reason": "end_turn"}, usage={"output_tokens": 2}),
                anthropic_event("message_stop"),
            ]
        )
    lines: list[bytes | float] = [
        ndjson({"message": {"role": "assistant", "content": text}, "done": False}),
        ndjson({"message": {"role": "assistant", "content": ""}, "done": True, "done_reason": "stop"}),
    ]
    return Reply(lines, headers={"content-type": "application/x-ndjson"})

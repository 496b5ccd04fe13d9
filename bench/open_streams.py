"""A light load client for many concurrent streams: raw asyncio sockets, one process, no HTTP library.

    python bench/open_streams.py HOST PORT PATH BODY_FILE MARKER COUNT START_AT WATCH_SECONDS

At the wall-clock time ``START_AT`` it asks for ``COUNT`` streams at once (POST ``PATH`` with the body
in ``BODY_FILE``), notes when each one's first token (the bytes ``MARKER``) arrives, then keeps reading them all for
``WATCH_SECONDS`` and counts which ones received bytes in the last half of that time. It closes
every connection and prints one JSON line: first-event delays, how many progressed, and errors.
``bench/scale.py`` runs several of these processes so the client is not the bottleneck.
"""

from __future__ import annotations

import asyncio
import json
import resource
import sys
import time
from typing import Any


class Stream(asyncio.Protocol):
    """One streamed request: counts bytes and notes when its first token arrived."""

    def __init__(self, request: bytes, marker: bytes, requested_at: float) -> None:
        self.request = request
        self.marker = marker
        self.requested_at = requested_at
        self.first_event: float | None = None
        self.received = 0
        self.error: str | None = None
        self.status_ok: bool | None = None
        self.transport: asyncio.Transport | None = None
        self._head = b""

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]
        transport.write(self.request)

    def data_received(self, data: bytes) -> None:
        self.received += len(data)
        if self.first_event is None:
            self._head += data
            if self.status_ok is None and b"\r\n" in self._head:
                self.status_ok = self._head.startswith(b"HTTP/1.1 200")
            if self.marker in self._head:
                self.first_event = time.monotonic()
                self._head = b""

    def connection_lost(self, exc: Exception | None) -> None:
        if exc is not None and self.error is None:
            self.error = type(exc).__name__


async def run(
    host: str, port: int, path: str, body: bytes, marker: bytes, count: int, start_at: float, watch: float
) -> dict[str, Any]:
    loop = asyncio.get_running_loop()
    request = (
        f"POST {path} HTTP/1.1\r\nhost: {host}:{port}\r\ncontent-type: application/json\r\n"
        f"accept: text/event-stream\r\ncontent-length: {len(body)}\r\n\r\n"
    ).encode() + body
    await asyncio.sleep(max(0.0, start_at - time.time()))
    requested_at = time.monotonic()
    streams = [Stream(request, marker, requested_at) for _ in range(count)]

    async def connect(stream: Stream) -> None:
        try:
            await loop.create_connection(lambda: stream, host, port)
        except OSError as exc:
            stream.error = type(exc).__name__

    await asyncio.gather(*(connect(stream) for stream in streams))
    await asyncio.sleep(watch / 2)
    halfway = [stream.received for stream in streams]
    await asyncio.sleep(watch / 2)
    progressed = sum(1 for stream, before in zip(streams, halfway, strict=True) if stream.received > before)
    for stream in streams:
        if stream.transport is not None:
            stream.transport.close()
    delays = sorted(s.first_event - s.requested_at for s in streams if s.first_event is not None)
    errors: dict[str, int] = {}
    for stream in streams:
        if stream.error is not None:
            errors[stream.error] = errors.get(stream.error, 0) + 1
        elif stream.status_ok is False:
            errors["non-200"] = errors.get("non-200", 0) + 1
    return {"requested": count, "first_event_delays": delays, "progressed": progressed, "errors": errors}


def main() -> None:
    host, port, path, body_file, marker, count, start_at, watch = sys.argv[1:9]
    _soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    with open(body_file, "rb") as file:
        body = file.read()
    try:
        import uvloop

        uvloop.install()
    except ImportError:
        pass
    result = asyncio.run(run(host, int(port), path, body, marker.encode(), int(count), float(start_at), float(watch)))
    print(json.dumps(result), flush=True)


if __name__ == "__main__":
    main()

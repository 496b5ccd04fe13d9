"""A light load client: ``CONCURRENCY`` raw-socket loops POSTing one streamed request each until
``REQUESTS`` are done, one connection per request (``connection: close``, so the body ends at EOF).

    python bench/load.py PORT PATH BODY_FILE MARKER CONCURRENCY REQUESTS

Prints one JSON line: requests done, failures, each request's time to first token (the first
``MARKER`` bytes) and the fewest markers any response held. ``bench/compare.py`` runs several.
"""

from __future__ import annotations

import asyncio
import json
import sys
import time
from typing import Any


async def one(port: int, request: bytes, marker: bytes) -> tuple[float, int]:
    """One request read to its end: (seconds to the first marker, markers in the body)."""
    started = time.perf_counter()
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(request)
    first = 0.0
    seen = b""
    count = 0
    while chunk := await reader.read(65536):
        seen = seen[-len(marker) :] + chunk
        found = seen.count(marker)
        if found and not first:
            first = time.perf_counter() - started
        count += found
    writer.close()
    if not seen.startswith(b"HTTP/1.1 200") and count == 0:
        raise RuntimeError(seen[:200].decode("latin-1"))
    return first, count


async def run(port: int, path: str, body: bytes, marker: bytes, concurrency: int, requests: int) -> dict[str, Any]:
    request = (
        f"POST {path} HTTP/1.1\r\nhost: 127.0.0.1:{port}\r\ncontent-type: application/json\r\n"
        f"accept: text/event-stream\r\nconnection: close\r\ncontent-length: {len(body)}\r\n\r\n"
    ).encode() + body
    left = requests
    firsts: list[float] = []
    counts: list[int] = []
    failures: list[str] = []

    async def loop() -> None:
        nonlocal left
        while left > 0:
            left -= 1
            try:
                first, count = await one(port, request, marker)
            except (OSError, RuntimeError) as exc:
                failures.append(repr(exc)[:200])
                continue
            firsts.append(first)
            counts.append(count)

    await asyncio.gather(*(loop() for _ in range(concurrency)))
    return {"done": len(firsts), "failures": failures, "first_token_s": firsts, "min_tokens": min(counts, default=0)}


def main() -> None:
    port, path, body_file, marker, concurrency, requests = sys.argv[1:7]
    with open(body_file, "rb") as file:
        body = file.read()
    result = asyncio.run(run(int(port), path, body, marker.encode(), int(concurrency), int(requests)))
    print(json.dumps(result), flush=True)


if __name__ == "__main__":
    main()

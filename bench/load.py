"""A light load client: ``CONCURRENCY`` raw-socket loops POSTing one streamed request each until
``REQUESTS`` are done, one connection per request (``connection: close``, so the body ends at EOF).

    python bench/load.py PORT PATH BODY_FILE MARKER CONCURRENCY REQUESTS [--header NAME:VALUE ...]

Every ``@UNIQUE@`` in the body is replaced, per request, by an id no other request of any load
process uses (a random prefix for this process and a counter): a new thread id per request for
server-held threads. ``--header`` adds a request header (an API key, an ``Origin``).

Prints one JSON line: requests done, failures, each request's time to first token (the first
``MARKER`` bytes) and the fewest markers any response held. ``bench/compare.py`` runs several.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import secrets
import time
from typing import Any

UNIQUE = b"@UNIQUE@"


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


def requests_of(port: int, path: str, body: bytes, headers: list[str]) -> Any:
    """The raw request bytes to send next: the same each time, unless the body holds ``UNIQUE``."""
    head = f"POST {path} HTTP/1.1\r\nhost: 127.0.0.1:{port}\r\ncontent-type: application/json\r\n"
    head += "accept: text/event-stream\r\nconnection: close\r\n"
    head += "".join(f"{name.strip()}: {value.strip()}\r\n" for name, value in (h.split(":", 1) for h in headers))

    def build(content: bytes) -> bytes:
        return f"{head}content-length: {len(content)}\r\n\r\n".encode() + content

    if UNIQUE not in body:
        return itertools.repeat(build(body))
    prefix = secrets.token_hex(4)
    return (build(body.replace(UNIQUE, f"{prefix}-{n}".encode())) for n in itertools.count())


async def run(
    port: int, path: str, body: bytes, marker: bytes, concurrency: int, requests: int, headers: list[str]
) -> dict[str, Any]:
    to_send = requests_of(port, path, body, headers)
    left = requests
    firsts: list[float] = []
    counts: list[int] = []
    failures: list[str] = []

    async def loop() -> None:
        nonlocal left
        while left > 0:
            left -= 1
            try:
                first, count = await one(port, next(to_send), marker)
            except (OSError, RuntimeError) as exc:
                failures.append(repr(exc)[:200])
                continue
            firsts.append(first)
            counts.append(count)

    await asyncio.gather(*(loop() for _ in range(concurrency)))
    return {"done": len(firsts), "failures": failures, "first_token_s": firsts, "min_tokens": min(counts, default=0)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("port", type=int)
    parser.add_argument("path")
    parser.add_argument("body_file")
    parser.add_argument("marker")
    parser.add_argument("concurrency", type=int)
    parser.add_argument("requests", type=int)
    parser.add_argument("--header", action="append", default=[], help="NAME:VALUE, repeatable")
    args = parser.parse_args()
    with open(args.body_file, "rb") as file:
        body = file.read()
    result = asyncio.run(
        run(args.port, args.path, body, args.marker.encode(), args.concurrency, args.requests, args.header)
    )
    print(json.dumps(result), flush=True)


if __name__ == "__main__":
    main()

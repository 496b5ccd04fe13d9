"""Client CPU of the upstream HTTP client: chatgate's own transport against the well-kept libraries.

    ./bench/transport_cpu.sh [--rounds 5] [--open 1000] [--streams 20] [--tokens 200]

chatgate calls a model API with one POST whose answer streams for a long time, thousands at once. What
its client costs is measured here alone, without chatgate around it, in the client's own process, for
four clients that read the same fake OpenAI upstream (``serve.py upstream``) the same way (raw body bytes,
no SSE parsing, which all would share):

- ``chatgate``: httpx's client API over ``chatgate.providers`` ``UpstreamTransport`` (what chatgate uses);
- ``httpx``: httpx's own transport (httpcore, h11, anyio), one unbounded pool;
- ``httpx2``: pydantic's maintained fork of httpx (httpcore2), one unbounded pool;
- ``aiohttp``: aiohttp's ``ClientSession`` with an unbounded ``TCPConnector``.

Two shapes, each its own upstream: **open** — ``--open`` streams requested at the same instant, each
answered at once with a short reply (CPU per stream: connect, request, headers, a few chunks, close);
**paced** — ``--streams`` streams at once of ``--tokens`` tokens, one token a millisecond, so each token
is a read (CPU per token). Every client runs on uvloop in a fresh process per round, the variants
interleaved round by round; the median round is reported, with each ratio to chatgate's transport. A
benchmark, not a test: it asserts nothing about time.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

BENCH_DIR = Path(__file__).resolve().parent
CLIENTS = ("chatgate", "httpx", "httpx2", "aiohttp")
BODY = json.dumps({"model": "bench", "stream": True, "messages": [{"role": "user", "content": "Hello"}]}).encode()
OPEN_TOKENS = 2
Reader = Callable[[str], Awaitable[int]]


async def _reader(client: str) -> tuple[Reader, Callable[[], Awaitable[None]]]:
    """One stream read to its end with ``client``, returning the body bytes; and how to close the client."""
    headers = {"content-type": "application/json"}
    if client in ("chatgate", "httpx", "httpx2"):
        if client == "httpx2":
            import httpx2 as httpx_like
        else:
            import httpx as httpx_like  # type: ignore[no-redef]
        if client == "chatgate":
            from chatgate.providers.client import upstream_client

            session: Any = upstream_client()
        else:
            limits = httpx_like.Limits(max_connections=None, max_keepalive_connections=100, keepalive_expiry=30.0)
            session = httpx_like.AsyncClient(limits=limits, timeout=httpx_like.Timeout(30.0, read=None))

        async def read_httpx(url: str) -> int:
            received = 0
            async with session.stream("POST", url, content=BODY, headers=headers) as response:
                async for chunk in response.aiter_raw():
                    received += len(chunk)
            return received

        return read_httpx, session.aclose
    import aiohttp

    connector = aiohttp.TCPConnector(limit=0, keepalive_timeout=30.0)
    aio = aiohttp.ClientSession(connector=connector, timeout=aiohttp.ClientTimeout(total=None, connect=30.0))

    async def read_aiohttp(url: str) -> int:
        received = 0
        async with aio.post(url, data=BODY, headers=headers) as response:
            async for chunk in response.content.iter_any():
                received += len(chunk)
        return received

    return read_aiohttp, aio.close


async def _measure(client: str, url: str, count: int) -> dict[str, float]:
    read, close = await _reader(client)
    await read(url)  # warm: imports, the first connection
    cpu, wall = time.process_time(), time.perf_counter()
    sizes = await asyncio.gather(*(read(url) for _ in range(count)))
    result = {"cpu": time.process_time() - cpu, "wall": time.perf_counter() - wall, "bytes": float(sum(sizes))}
    await close()
    return result


def client_main(client: str, url: str, count: int) -> None:
    """Run in the client's own process: print the CPU seconds for ``count`` concurrent streams as JSON."""
    import uvloop

    print(json.dumps(uvloop.run(_measure(client, url, count))))


def _python_for(client: str) -> str:
    # aiohttp and httpx2 live in their own environment (transport_cpu.sh makes it), beside chatgate.
    return str(BENCH_DIR / ".venv-clients" / "bin" / "python") if client in ("httpx2", "aiohttp") else sys.executable


def _round(client: str, url: str, count: int) -> dict[str, float]:
    command = [_python_for(client), __file__, "--client", client, "--url", url, "--count", str(count)]
    output = subprocess.run(command, check=True, capture_output=True, text=True, cwd=BENCH_DIR.parent).stdout
    return dict(json.loads(output.strip().splitlines()[-1]))


def main() -> None:
    """Interleave the clients round by round over both shapes and print the table."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--client", choices=CLIENTS)
    parser.add_argument("--url")
    parser.add_argument("--count", type=int)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--open", type=int, default=1000)
    parser.add_argument("--streams", type=int, default=20)
    parser.add_argument("--tokens", type=int, default=200)
    parser.add_argument("--clients", nargs="*", default=list(CLIENTS), choices=CLIENTS)
    args = parser.parse_args()
    if args.client:
        client_main(args.client, args.url, args.count)
        return
    sys.path.insert(0, str(BENCH_DIR))
    from harness import ServerProcess

    shapes = {
        "open": (f"{OPEN_TOKENS},0", args.open, args.open),
        "paced": (f"{args.tokens},1", args.streams, args.streams * args.tokens),
    }
    print(f"clients {args.clients}, {args.rounds} rounds, interleaved; client process CPU (time.process_time)")
    for shape, (spec, count, per) in shapes.items():
        upstream = ServerProcess("upstream", spec)
        try:
            url = f"{upstream.url}/v1/chat/completions"
            samples: dict[str, list[float]] = {client: [] for client in args.clients}
            for _ in range(args.rounds):
                for client in args.clients:
                    samples[client].append(_round(client, url, count)["cpu"] / per * 1e6)
        finally:
            upstream.stop()
        unit = "µs per stream" if shape == "open" else "µs per token"
        base = statistics.median(samples["chatgate"]) if "chatgate" in samples else None
        print(f"\n{shape}: {count} concurrent streams, {unit} (median of {args.rounds}; min-max)")
        for client, values in samples.items():
            median = statistics.median(values)
            ratio = f"{median / base:5.2f}x" if base else ""
            print(f"  {client:10s} {median:9.1f}  ({min(values):.1f}-{max(values):.1f})  {ratio}")


if __name__ == "__main__":
    main()

"""The client's CPU per Redis round trip in redis.asyncio, with each of its reply parsers.

    .venv/bin/python bench/redis_cpu.py [--rounds 15] [--calls 1000]

Calls as chatgate's look (a Lua script returning a short array, an ``MGET`` of three keys), on a client
built as app/web/redis_pool.py builds it, under uvloop as ``chatgate serve`` runs, against a Redis on
loopback (tests/servers.py; its own CPU does not count). ``resp`` is redis-py's Python parser (what it
uses without hiredis), ``hiredis`` the C parser of the ``hiredis`` package, measured only when it is
installed. Batches alternate; the median per round trip is printed. A benchmark, not a test.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import redis.asyncio as redis
import uvloop
from redis._parsers import _AsyncHiredisParser, _AsyncRESP3Parser
from redis.utils import HIREDIS_AVAILABLE

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from tests.servers import running_redis

SCRIPT = "redis.call('INCR', KEYS[1]); redis.call('EXPIRE', KEYS[1], 60); return {redis.call('GET', KEYS[1]), 1, 'ok'}"


async def measure(url: str, args: argparse.Namespace) -> None:
    """Warm up each client, alternate batches, print the medians."""
    parsers: dict[str, Any] = {"resp": _AsyncRESP3Parser}
    if HIREDIS_AVAILABLE:
        parsers["hiredis"] = _AsyncHiredisParser
    clients = {
        name: redis.Redis.from_url(
            url, socket_connect_timeout=2.0, socket_timeout=5.0, health_check_interval=30, parser_class=parser
        )
        for name, parser in parsers.items()
    }
    await next(iter(clients.values())).set("b", "12.5")

    async def batch(client: redis.Redis, calls: int) -> None:
        script = client.register_script(SCRIPT)
        for _ in range(calls // 2):
            await script(keys=["a"], args=[1])
            await client.mget("a", "b", "c")

    for client in clients.values():
        await batch(client, 500)
    per_trip: dict[str, list[float]] = {name: [] for name in clients}
    for _ in range(args.rounds):
        for name, client in clients.items():
            before = time.process_time()
            await batch(client, args.calls)
            per_trip[name].append((time.process_time() - before) / args.calls * 1e6)
    for name, values in per_trip.items():
        print(f"{name:<8} {statistics.median(values):6.1f} µs a round trip   ({min(values):.1f}-{max(values):.1f})")
    if not HIREDIS_AVAILABLE:
        print("hiredis is not installed: .venv/bin/pip install 'hiredis>=3,<4' to measure it beside")
    for client in clients.values():
        await client.aclose()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--calls", type=int, default=1000, help="round trips per batch")
    args = parser.parse_args()
    with running_redis() as url:
        uvloop.run(measure(url, args))


if __name__ == "__main__":
    main()

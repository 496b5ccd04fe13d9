"""Run one benchmark server under uvicorn on 127.0.0.1, with the settings every measured server shares.

    python bench/serve.py chatgate CONFIG.toml   chatgate itself, from a config file
    python bench/serve.py floor FRAMES.json      the bare floor: replays captured frames (floor_app.py)
    python bench/serve.py floor-per-event FRAMES.json   the same bytes, one send per SSE frame
    python bench/serve.py proxy UPSTREAM_URL     the bare relay floor: forwards upstream bytes (floor_app.py)
    python bench/serve.py translator UPSTREAM_URL the translating floor: upstream chunks to AG-UI frames
    python bench/serve.py upstream TOKENS,PACE_MS a fake OpenAI-compatible upstream (fake_openai.py)
    python bench/serve.py pydantic-ai SOURCE     pydantic-ai's UI adapters (peers_pydantic_ai.py, peers' venv)

It binds a free port, prints it on the first line of stdout, then serves until SIGTERM/SIGINT. The
benchmark reads the server's CPU time from /proc, so each server is its own process.
"""

from __future__ import annotations

import os
import resource
import socket
import sys
from pathlib import Path
from typing import Any

import uvicorn

# Identical for every measured server: the differences measured are the apps', not uvicorn's.
UVICORN_SETTINGS: dict[str, Any] = {
    "loop": "uvloop",
    "http": "httptools",
    "log_level": "warning",
    "access_log": False,
    "lifespan": "on",
    # As `chatgate serve` sets it: a burst of thousands of connections must not overflow the accept queue.
    "backlog": 4096,
}


def use_httpx_pool(kind: str) -> None:
    """Give chatgate an earlier upstream client, for comparison (``scale.py --pool single``).

    ``single``: one httpx pool, as chatgate had first. (The sharded pool that came between it and
    chatgate's own transport, app/providers/pool.py, was removed; its figures are in docs/performance.md.)
    """
    import httpx

    import chatgate.web.app

    limits = httpx.Limits(max_connections=None, max_keepalive_connections=100, keepalive_expiry=30.0)
    timeout = httpx.Timeout(10.0, read=None)
    chatgate.web.app.upstream_client = lambda: httpx.AsyncClient(timeout=timeout, limits=limits)  # type: ignore[assignment]


def build_app(kind: str, argument: str) -> Any:
    if kind == "chatgate":
        from chatgate.config import load_config
        from chatgate.web.app import create_app

        if os.environ.get("BENCH_POOL") == "single":
            use_httpx_pool(os.environ["BENCH_POOL"])
        return create_app(load_config(argument))
    if kind in ("floor", "floor-per-event"):
        from floor_app import replay_app

        return replay_app(Path(argument), per_event=kind == "floor-per-event")
    if kind == "proxy":
        from floor_app import proxy_app

        return proxy_app(argument)
    if kind == "translator":
        from floor_app import translate_app

        return translate_app(argument)
    if kind == "pydantic-ai":
        from peers_pydantic_ai import peer_app

        return peer_app(argument)
    if kind == "upstream":
        from fake_openai import upstream_app

        tokens, pace_ms = argument.split(",")
        return upstream_app(int(tokens), float(pace_ms))
    raise SystemExit(f"unknown server kind {kind!r}")


def main() -> None:
    kind, argument = sys.argv[1], sys.argv[2]
    # The scale benchmark opens 10,000 streams: a relaying server needs two descriptors for each, more
    # than this machine's hard limit of 20,000 with what else is open. Raised when allowed (root).
    _soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    try:
        resource.setrlimit(resource.RLIMIT_NOFILE, (max(hard, 65536), max(hard, 65536)))
    except (ValueError, OSError):
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    app = build_app(kind, argument)
    if kind == "chatgate" and os.environ.get("BENCH_GC") != "default":
        from chatgate.serve.process import prepare_for_serving

        prepare_for_serving()  # as `chatgate serve` does
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    print(sock.getsockname()[1], flush=True)
    server = uvicorn.Server(uvicorn.Config(app, **UVICORN_SETTINGS))
    server.run(sockets=[sock])


if __name__ == "__main__":
    main()

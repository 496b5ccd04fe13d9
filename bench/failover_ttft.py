"""Time to first token of a failover before output: what chatgate adds beyond the failed attempt.

    .venv/bin/python bench/failover_ttft.py [--rounds 7] [--requests 100]

The whole app in process (as app_cpu.py drives it, on uvloop), its upstream client answering from memory:
``direct`` is an agent on a model that answers; ``failover`` is an agent whose first model is refused at
once (a connect error, as a dead server on loopback gives) and whose fallback is that same answering
model. The breaker is set never to cool the dead model down, so every ``failover`` run fails over. The
time from the request to the first text frame is read for each, batches alternating, and the medians'
difference is what a failover before output adds: the failed attempt (here next to nothing) plus the
chain's work. The issue's bound is 5 ms beyond the failed attempt. A benchmark, not a test.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx
import uvloop
from fake_openai import reply_frames
from relay_cpu import USER_TEXT
from stream_cpu import ag_ui_body, drive, vercel_ai_body

import chatgate.web.lifespan
from chatgate.config import load_config
from chatgate.web.app import create_app

CONFIG = """
[server]
failover_failures = 1000000000   # never cool the dead model down: every run fails over

[providers.live]
kind = "openai"
base_url = "http://live.invalid/v1"
api_key = "bench"

[providers.dead]
kind = "openai"
base_url = "http://dead.invalid/v1"
api_key = "bench"
retries = 0

[agents.direct]
model = "live:m"
default = true

[agents.failover]
model = "dead:m"
fallbacks = ["live:m"]
"""


def use_memory_upstreams(tokens: int) -> None:
    """``live.invalid`` answers ``tokens`` tokens from memory; ``dead.invalid`` refuses the connection."""
    frames = reply_frames(tokens)

    async def body() -> Any:
        for frame in frames:
            yield frame

    def answer(request: httpx.Request) -> httpx.Response:
        if request.url.host == "dead.invalid":
            raise httpx.ConnectError("connection refused", request=request)
        return httpx.Response(200, headers={"content-type": "text/event-stream"}, content=body())

    def client() -> httpx.AsyncClient:
        return httpx.AsyncClient(transport=httpx.MockTransport(answer), timeout=httpx.Timeout(10.0, read=None))

    chatgate.web.lifespan.upstream_client = client  # type: ignore[attr-defined]


async def first_token_ms(app: Any, path: str, body: bytes) -> float:
    """Milliseconds from the request to the first body frame that carries answer text."""
    started = time.perf_counter()
    first: float | None = None

    def on_message(message: dict[str, Any]) -> None:
        nonlocal first
        if first is None and message["type"] == "http.response.body" and b"word" in message.get("body", b""):
            first = time.perf_counter()

    await drive(app, path, body, on_message)
    assert first is not None, f"{path}: no answer text"
    return (first - started) * 1000


async def measure(args: argparse.Namespace) -> None:
    config = Path(tempfile.mkdtemp()) / "chatgate.toml"
    config.write_text(CONFIG)
    app = create_app(load_config(config))
    routes = {
        f"{agent} {protocol}": (f"/agents/{agent}/{route}", body)
        for agent in ("direct", "failover")
        for protocol, route, body in (
            ("AG-UI", "ag-ui", ag_ui_body(USER_TEXT)),
            ("useChat", "chat", vercel_ai_body(USER_TEXT)),
        )
    }
    medians: dict[str, list[float]] = {name: [] for name in routes}
    async with app.router.lifespan_context(app):
        for path, body in routes.values():  # warm up every route
            for _ in range(5):
                await first_token_ms(app, path, body)
        for _ in range(args.rounds):
            for name, (path, body) in routes.items():
                times = [await first_token_ms(app, path, body) for _ in range(args.requests)]
                medians[name].append(statistics.median(times))
    for protocol in ("AG-UI", "useChat"):
        direct = statistics.median(medians[f"direct {protocol}"])
        failover = statistics.median(medians[f"failover {protocol}"])
        print(
            f"{protocol:<8} first token: direct {direct:6.3f} ms, failover {failover:6.3f} ms,"
            f" added {failover - direct:+6.3f} ms"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--requests", type=int, default=100, help="requests per route per round")
    parser.add_argument("--tokens", type=int, default=20, help="the answer's length")
    args = parser.parse_args()
    use_memory_upstreams(args.tokens)
    uvloop.run(measure(args))


if __name__ == "__main__":
    main()

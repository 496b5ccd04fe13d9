"""Server CPU per streamed event: chatgate (AG-UI and useChat routes) against a bare ASGI floor.

    .venv/bin/python bench/stream_cpu.py [--rounds 7] [--requests 200] [--warmup 20] [--access]

builtin:echo answers a long user message with a 200-token reply. The exact frames chatgate sends
for each route are captured once, in process, one entry per ASGI send; the floor (floor_app.py)
replays exactly those bytes with the same chunking. Each server runs in its own uvicorn process with
the same settings (serve.py), and is driven by sequential httpx requests over loopback. The server
process's CPU time is read from /proc before and after each batch; the batches of the three servers
alternate over several rounds and the median is reported. A benchmark, not a test: nothing asserts
on time. With ``--access`` chatgate runs with an API key (rpm and max_concurrent_streams set) and CORS,
and every request carries the key and an allowed ``Origin``: the access layer's cost per event.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import tempfile
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from floor_app import save_capture
from harness import Target, cpu_source, report, run_rounds, running
from serve import UVICORN_SETTINGS

from chatgate.config import load_config
from chatgate.web.app import create_app

REPLY_TOKENS = 200
SYSTEM_PROMPT = "You are a benchmark."
CONFIG = f"""
[agents.bench]
model = "builtin:echo"
system_prompt = "{SYSTEM_PROMPT}"
default = true
"""
ACCESS_KEY = "bench-secret-0123456789"
ORIGIN = "https://app.example.com"
ACCESS_CONFIG = f"""
[server]
cors_origins = ["{ORIGIN}"]

[[keys]]
id = "bench"
key = "{ACCESS_KEY}"
rpm = 1000000
max_concurrent_streams = 4
"""
ACCESS_HEADERS = {"authorization": f"Bearer {ACCESS_KEY}", "origin": ORIGIN}


def user_text() -> str:
    """A user message that makes builtin:echo reply with exactly ``REPLY_TOKENS`` words."""
    fixed = len(f"System prompt: {SYSTEM_PROMPT}\nLast user message:".split())
    return " ".join(f"word{n:03d}" for n in range(REPLY_TOKENS - fixed))


def ag_ui_body(text: str) -> bytes:
    message = {"id": "u1", "role": "user", "content": text}
    return json.dumps({"threadId": "t1", "runId": "r1", "messages": [message]}).encode()


def vercel_ai_body(text: str) -> bytes:
    message = {"id": "u1", "role": "user", "parts": [{"type": "text", "text": text}]}
    return json.dumps({"id": "chat1", "messages": [message], "trigger": "submit-message"}).encode()


def scope_for(path: str, body: bytes, extra_headers: Mapping[str, str] | None = None) -> dict[str, Any]:
    """An HTTP scope like uvicorn's for ``POST path`` with a JSON ``body`` (and any extra headers)."""
    extra = [(name.encode(), value.encode()) for name, value in (extra_headers or {}).items()]
    return {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": "POST",
        "scheme": "http",
        "path": path,
        "raw_path": path.encode(),
        "root_path": "",
        "query_string": b"",
        "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()), *extra],
        "client": ("127.0.0.1", 50000),
        "server": ("127.0.0.1", 8000),
    }


async def drive(
    app: Any,
    path: str,
    body: bytes,
    on_message: Callable[[dict[str, Any]], None],
    extra_headers: Mapping[str, str] | None = None,
) -> None:
    """One request through ``app`` in process; each message it sends goes to ``on_message``."""
    request_sent = False
    finished = asyncio.Event()

    async def receive() -> dict[str, Any]:
        nonlocal request_sent
        if not request_sent:
            request_sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        await finished.wait()
        return {"type": "http.disconnect"}

    async def send(message: dict[str, Any]) -> None:
        if message["type"] == "http.response.start":
            assert message["status"] == 200, message
        on_message(message)
        if message["type"] == "http.response.body" and not message.get("more_body", False):
            finished.set()

    await app(scope_for(path, body, extra_headers), receive, send)


async def capture(
    app: Any, path: str, body: bytes, extra_headers: dict[str, str]
) -> tuple[list[tuple[bytes, bytes]], list[bytes]]:
    """The response headers and body chunks, one per ASGI send, that ``app`` answers ``body`` with."""
    headers: list[tuple[bytes, bytes]] = []
    chunks: list[bytes] = []

    def keep(message: dict[str, Any]) -> None:
        if message["type"] == "http.response.start":
            headers.extend(message["headers"])
        elif message.get("body"):
            chunks.append(message["body"])

    async with app.router.lifespan_context(app):
        await drive(app, path, body, keep, extra_headers)
    return headers, chunks


def frame_count(chunks: list[bytes]) -> int:
    return b"".join(chunks).count(b"\n\n")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--requests", type=int, default=200, help="requests per batch")
    parser.add_argument("--warmup", type=int, default=20, help="requests per server before measuring")
    parser.add_argument("--max-seconds", type=float, default=10.0, help="time limit of one batch")
    parser.add_argument("--access", action="store_true", help="measure with an API key, limits and CORS on")
    args = parser.parse_args()
    request_headers = ACCESS_HEADERS if args.access else {}

    text = user_text()
    routes = {"AG-UI": ("/ag-ui", ag_ui_body(text)), "useChat": ("/api/chat", vercel_ai_body(text))}
    print(f"reply: {REPLY_TOKENS} tokens from builtin:echo; CPU from {cpu_source()}; uvicorn {UVICORN_SETTINGS}")
    with tempfile.TemporaryDirectory() as tmp:
        config_file = Path(tmp) / "chatgate.toml"
        config_file.write_text(CONFIG + (ACCESS_CONFIG if args.access else ""))
        app = create_app(load_config(config_file))
        captures: dict[str, Path] = {}
        events: dict[str, int] = {}
        for name, (path, body) in routes.items():
            headers, chunks = asyncio.run(capture(app, path, body, request_headers))
            deltas = sum(chunk.count(b'"TEXT_MESSAGE_CONTENT"') + chunk.count(b'"text-delta"') for chunk in chunks)
            assert deltas == REPLY_TOKENS, f"{name}: {deltas} text deltas, expected {REPLY_TOKENS}"
            captures[name] = Path(tmp) / f"{name}.json"
            save_capture(captures[name], headers, chunks)
            events[name] = b"".join(chunks).count(b"\n\n")
            print(
                f"{name:<8} POST {path:<10} events/request {events[name]}, sends/request {len(chunks)}, "
                f"bytes/request {sum(map(len, chunks))}"
            )
        print()

        with (
            running("chatgate", str(config_file)) as chatgate,
            running("floor", str(captures["AG-UI"])) as ag_ui_floor,
            running("floor", str(captures["useChat"])) as vercel_floor,
        ):
            targets: list[Target] = []
            for name, floor_server in (("AG-UI", ag_ui_floor), ("useChat", vercel_floor)):
                path, body = routes[name]
                floor = Target(f"floor ({name} bytes)", floor_server, path, body, events[name])
                measured = Target(f"chatgate {name}", chatgate, path, body, events[name], floor, request_headers)
                targets += [floor, measured]
            try:
                run_rounds(
                    targets,
                    rounds=args.rounds,
                    requests=args.requests,
                    warmup=args.warmup,
                    max_seconds=args.max_seconds,
                )
                report(targets, unit="event")
            finally:
                for target in targets:
                    target.close()


if __name__ == "__main__":
    main()

"""A fake OpenAI-compatible upstream for the relay benchmark: ``POST .../chat/completions`` streams a
fixed reply of ``tokens`` words as Chat Completions chunks, one ASGI send per chunk, then the usage chunk
and ``data: [DONE]``.

``pace_ms`` waits that long before each token after the first, as a real model does between tokens. Without it the
whole reply reaches the relay in a few reads, and a byte-forwarding floor would forward a handful of
large chunks where a real deployment forwards one per token.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

Scope = dict[str, Any]


def _chunk(delta: dict[str, Any], finish_reason: str | None = None) -> bytes:
    choice = {"index": 0, "delta": delta, "finish_reason": finish_reason}
    payload = {
        "id": "chatcmpl-bench",
        "object": "chat.completion.chunk",
        "created": 1700000000,
        "model": "bench",
        "choices": [choice],
    }
    return b"data: " + json.dumps(payload, separators=(",", ":")).encode() + b"\n\n"


def _token(n: int, words: list[str] | None) -> str:
    return f"word{n:03d} " if words is None else f" {words[n % len(words)]}"


def reply_frames(tokens: int, words: list[str] | None = None) -> list[bytes]:
    """The upstream body, one entry per send: role chunk, ``tokens`` content chunks, finish, usage, DONE.

    Each token is ``wordNNN `` or, given ``words``, the next of them with a leading space, in turn.
    """
    usage = {"prompt_tokens": 12, "completion_tokens": tokens, "total_tokens": 12 + tokens}
    usage_chunk = {
        "id": "chatcmpl-bench",
        "object": "chat.completion.chunk",
        "created": 1700000000,
        "model": "bench",
        "choices": [],
        "usage": usage,
    }
    return [
        _chunk({"role": "assistant", "content": ""}),
        *(_chunk({"content": _token(n, words)}) for n in range(tokens)),
        _chunk({}, "stop"),
        b"data: " + json.dumps(usage_chunk, separators=(",", ":")).encode() + b"\n\n",
        b"data: [DONE]\n\n",
    ]


def upstream_app(tokens: int, pace_ms: float) -> Any:
    frames = reply_frames(tokens)
    headers = [(b"content-type", b"text/event-stream")]
    pace = pace_ms / 1000

    async def app(scope: Scope, receive: Any, send: Any) -> None:
        if scope["type"] == "lifespan":
            while (await receive())["type"] != "lifespan.shutdown":
                await send({"type": "lifespan.startup.complete"})
            await send({"type": "lifespan.shutdown.complete"})
            return
        more = True
        while more:
            more = (await receive()).get("more_body", False)
        if scope["method"] != "POST":
            await send({"type": "http.response.start", "status": 200, "headers": []})
            await send({"type": "http.response.body", "body": b"ok"})
            return
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        for index, frame in enumerate(frames):
            if pace and index > 1:  # the role chunk and the first token come at once, as time to first token
                await asyncio.sleep(pace)
            await send({"type": "http.response.body", "body": frame, "more_body": True})
        await send({"type": "http.response.body", "body": b"", "more_body": False})

    return app

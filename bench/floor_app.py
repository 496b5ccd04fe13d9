"""The floors chatgate is measured against: bare ASGI apps that do only what any server must.

- ``replay_app``: reads the request body, then sends the frames chatgate sent for the same request,
  byte for byte and one ASGI send per chatgate send, with chatgate's response headers; or, with
  ``per_event``, the same bytes with one send per SSE frame, as a server that writes each event as it
  makes it must.
- ``proxy_app``: reads the request body, posts it to the upstream with chatgate's own upstream client
  (``upstream_client()``: the same httpx client and transport chatgate relays with) and forwards each
  chunk of the upstream's response body as one send, untouched. It builds its request and reads the
  body as chatgate's ``Upstream`` does (an ``httpx.Request`` from a parsed URL, the transport's own
  body stream), so the floor pays no client-side work that chatgate skips.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import httpx
from pydantic_core import from_json, to_json

from chatgate.providers.client import upstream_client

Scope = dict[str, Any]


async def _lifespan(receive: Any, send: Any, startup: Any = None, shutdown: Any = None) -> None:
    while True:
        message = await receive()
        if message["type"] == "lifespan.startup":
            if startup is not None:
                await startup()
            await send({"type": "lifespan.startup.complete"})
        elif message["type"] == "lifespan.shutdown":
            if shutdown is not None:
                await shutdown()
            await send({"type": "lifespan.shutdown.complete"})
            return


async def _read_body(receive: Any) -> bytes:
    body = b""
    more = True
    while more:
        message = await receive()
        body += message.get("body", b"")
        more = message.get("more_body", False)
    return body


def load_capture(path: Path) -> tuple[list[tuple[bytes, bytes]], list[bytes]]:
    """The response headers and the body chunks (one per ASGI send) stored by ``save_capture``."""
    data = json.loads(path.read_text())
    headers = [(name.encode("latin-1"), value.encode("latin-1")) for name, value in data["headers"]]
    return headers, [base64.b64decode(chunk) for chunk in data["chunks"]]


def save_capture(path: Path, headers: list[tuple[bytes, bytes]], chunks: list[bytes]) -> None:
    """Store a response's headers and body chunks for ``replay_app``."""
    data = {
        "headers": [(name.decode("latin-1"), value.decode("latin-1")) for name, value in headers],
        "chunks": [base64.b64encode(chunk).decode() for chunk in chunks],
    }
    path.write_text(json.dumps(data))


def one_send_per_event(chunks: list[bytes]) -> list[bytes]:
    """The same bytes cut into one chunk per SSE frame (each ends with a blank line)."""
    frames = b"".join(chunks).split(b"\n\n")
    return [frame + b"\n\n" for frame in frames[:-1]] + ([frames[-1]] if frames[-1] else [])


def replay_app(capture: Path, *, per_event: bool = False) -> Any:
    """Replay a capture: chatgate's own sends, or (``per_event``) one send per SSE frame."""
    headers, chunks = load_capture(capture)
    if per_event:
        chunks = one_send_per_event(chunks)
    start = {"type": "http.response.start", "status": 200, "headers": headers}
    bodies = [{"type": "http.response.body", "body": chunk, "more_body": True} for chunk in chunks]
    end = {"type": "http.response.body", "body": b"", "more_body": False}

    async def app(scope: Scope, receive: Any, send: Any) -> None:
        if scope["type"] == "lifespan":
            await _lifespan(receive, send)
            return
        await _read_body(receive)
        await send(start)
        for body in bodies:
            await send(body)
        await send(end)

    return app


_JSON_HEADERS = httpx.Headers({"content-type": "application/json"})
_TIMEOUT = httpx.Timeout(10.0, read=None).as_dict()

Relay = Callable[[httpx.AsyncClient, httpx.URL, bytes, Any], Awaitable[None]]


def _upstream_app(upstream: str, relay: Relay) -> Any:
    """A bare ASGI app on chatgate's upstream client: ``relay(client, url, body, send)`` answers a POST.

    ``url`` is ``upstream`` parsed once; the relay posts to it with ``upstream_request``.
    """
    clients: list[httpx.AsyncClient] = []
    url = httpx.URL(upstream)

    async def startup() -> None:
        # chatgate's own upstream client (its transport, no pool limit): the floor relays on the same stack.
        clients.append(upstream_client())

    async def shutdown() -> None:
        await clients[0].aclose()

    async def app(scope: Scope, receive: Any, send: Any) -> None:
        if scope["type"] == "lifespan":
            await _lifespan(receive, send, startup, shutdown)
            return
        body = await _read_body(receive)
        if scope["method"] != "POST":  # the harness's readiness check: answered here, not upstream
            await send({"type": "http.response.start", "status": 200, "headers": []})
            await send({"type": "http.response.body", "body": b"ok"})
            return
        await relay(clients[0], url, body, send)

    return app


def upstream_request(url: httpx.URL, content: bytes) -> httpx.Request:
    """A JSON POST to the upstream, built as chatgate's ``Upstream`` builds its requests."""
    return httpx.Request("POST", url, content=content, headers=_JSON_HEADERS, extensions={"timeout": _TIMEOUT})


def proxy_app(upstream: str) -> Any:
    """The byte proxy: posts the request body upstream and forwards each chunk of the answer untouched."""

    async def relay(client: httpx.AsyncClient, url: httpx.URL, body: bytes, send: Any) -> None:
        response = await client.send(upstream_request(url, body), stream=True)
        try:
            headers = [(b"content-type", response.headers["content-type"].encode("latin-1"))]
            await send({"type": "http.response.start", "status": response.status_code, "headers": headers})
            async for chunk in response.stream:  # type: ignore[union-attr]  # as chatgate reads it: no httpx iterators
                await send({"type": "http.response.body", "body": chunk, "more_body": True})
        finally:
            await response.aclose()
        await send({"type": "http.response.body", "body": b"", "more_body": False})

    return _upstream_app(upstream, relay)


def _token_text(message: bytes) -> Any:
    """The text of one Chat Completions SSE message, or None (the role chunk, the finish, usage, DONE)."""
    if not message.startswith(b"data: {"):
        return None
    choices = from_json(message[6:]).get("choices")
    return choices[0]["delta"].get("content") if choices else None


def translate_app(upstream: str) -> Any:
    """The translating floor: OpenAI chunks in, AG-UI text frames out. See the module docstring."""
    start = {"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"text/event-stream")]}
    content = b'data: {"type":"TEXT_MESSAGE_CONTENT","messageId":"m1","delta":'

    async def relay(client: httpx.AsyncClient, url: httpx.URL, body: bytes, send: Any) -> None:
        run = from_json(body)
        ids = b'"threadId":' + to_json(run["threadId"]) + b',"runId":' + to_json(run["runId"])
        messages = [{"role": m["role"], "content": m["content"]} for m in run["messages"]]
        upstream_body = to_json({"model": "bench", "messages": messages, "stream": True})
        response = await client.send(upstream_request(url, upstream_body), stream=True)
        held = b""
        try:
            await send(start)
            opening = b'data: {"type":"RUN_STARTED",' + ids + b"}\n\n"
            opening += b'data: {"type":"TEXT_MESSAGE_START","messageId":"m1","role":"assistant"}\n\n'
            await send({"type": "http.response.body", "body": opening, "more_body": True})
            async for chunk in response.stream:  # type: ignore[union-attr]
                *messages_read, held = (held + chunk).split(b"\n\n")
                texts = [_token_text(message) for message in messages_read]
                frames = b"".join(content + to_json(text) + b"}\n\n" for text in texts if text)
                if frames:
                    await send({"type": "http.response.body", "body": frames, "more_body": True})
        finally:
            await response.aclose()
        closing = b'data: {"type":"TEXT_MESSAGE_END","messageId":"m1"}\n\n'
        closing += b'data: {"type":"RUN_FINISHED",' + ids + b"}\n\n"
        await send({"type": "http.response.body", "body": closing, "more_body": False})

    return _upstream_app(upstream, relay)

"""An unexpected exception never resets the client's keep-alive connection: the next request on it succeeds.

Starlette's error middleware re-raises after answering, and uvicorn closes the connection on any
exception leaving the app, even after a complete response. Each case here raises at a different
moment and then sends a second request down the same socket (``auto_open = 0``: no silent reconnect).
"""

from __future__ import annotations

import http.client
import logging
from collections.abc import Iterator
from urllib.parse import urlsplit

import pytest
from starlette.routing import Route
from starlette.types import ASGIApp, Receive, Scope, Send

from chatgate.web.app import create_app
from tests.conftest import LiveServer, make_config


async def _before_start(scope: Scope, receive: Receive, send: Send) -> None:
    raise ValueError("boom before the response")


async def _mid_body(scope: Scope, receive: Receive, send: Send) -> None:
    await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"text/plain")]})
    await send({"type": "http.response.body", "body": b"partial", "more_body": True})
    raise ValueError("boom mid-body")


async def _after_end(scope: Scope, receive: Receive, send: Send) -> None:
    await send({"type": "http.response.start", "status": 200, "headers": [(b"content-length", b"4")]})
    await send({"type": "http.response.body", "body": b"done"})
    raise ValueError("boom after the response")


class _Raw:
    """A plain ASGI endpoint (a function would be taken for a request handler)."""

    def __init__(self, app: ASGIApp) -> None:
        self._app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        await self._app(scope, receive, send)


@pytest.fixture
def server() -> Iterator[tuple[str, int]]:
    app = create_app(make_config({"bot": {"model": "builtin:echo", "default": True}}))
    for path, endpoint in (("/boom/before", _before_start), ("/boom/mid", _mid_body), ("/boom/after", _after_end)):
        app.router.routes.append(Route(path, _Raw(endpoint)))
    live = LiveServer(app)
    live.start()
    address = urlsplit(live.url)
    yield address.hostname or "", address.port or 0
    live.stop()


@pytest.mark.parametrize(
    ("path", "status", "body"),
    [
        ("/boom/before", 500, b'{"error":{"code":"internal_error","message":"An internal error occurred."}}'),
        ("/boom/mid", 200, b"partial"),
        ("/boom/after", 200, b"done"),
    ],
)
def test_the_connection_survives_an_unexpected_exception(
    server: tuple[str, int], caplog: pytest.LogCaptureFixture, path: str, status: int, body: bytes
) -> None:
    connection = http.client.HTTPConnection(*server, timeout=10)
    connection.auto_open = 0
    connection.connect()
    try:
        with caplog.at_level(logging.ERROR):
            connection.request("GET", path)
            response = connection.getresponse()
            assert (response.status, response.read()) == (status, body)
            assert response.getheader("connection", "").lower() != "close"
            connection.request("GET", "/healthz")  # the same socket: a reset fails here
            assert connection.getresponse().read() == b'{"status":"ok"}'
    finally:
        connection.close()
    tracebacks = [record for record in caplog.records if record.exc_info and "boom" in str(record.exc_info[1])]
    assert len(tracebacks) == 1, [record.getMessage() for record in caplog.records]
    assert tracebacks[0].name == "chatgate.server"

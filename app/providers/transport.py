"""The upstream transport: HTTP/1.1 for httpx written on an asyncio protocol and httptools' C parser.

Every call chatgate makes to a model API is one POST whose answer streams for seconds or minutes, and a
busy process holds thousands at once. httpx's own transport goes through httpcore, h11 and anyio: per
request a pool scan over every open connection (O(n) per start, so O(n²) to open n streams), a pure
Python request and header build, a task group to connect; per chunk received a cancel scope, h11's
event machine and four iterator layers. Profiled opening 2,000 relayed streams, that was about half of
the server's CPU (docs/performance.md). ``UpstreamTransport`` does the same job directly:

- **Connections**: one ``asyncio.Protocol`` each; httptools (the parser uvicorn serves with) parses
  the response in C and the protocol hands body bytes to the reader as they come. Reading pauses the
  socket when more than ``_HIGH_WATER`` bytes wait unread.
- **Pool**: idle keep-alive connections per origin in a stack (the warmest is reused first), O(1)
  per request however many are open; at most ``max_idle`` kept per origin, none older than
  ``keepalive_expiry``. A request on a reused connection that the upstream closed before answering is
  sent again once on a new connection (the upstream saw nothing of it).
- **Timeouts**: ``connect`` bounds the TCP connect and the TLS handshake; ``read`` (``None`` for
  chatgate's streams, which the provider's watchdog bounds) each wait for the answer or a body chunk.
- **Errors** are httpx's own (``ConnectError``, ``ConnectTimeout``, ``ReadTimeout``, ``ReadError``,
  ``RemoteProtocolError``), so callers handle them exactly as with httpx's transport.

Only what the providers need: HTTP/1.1 over TCP or TLS (ALPN ``http/1.1``), no proxies (``upstream_client``
mounts httpx's own transport for proxied origins), no HTTP/2, no upgrades, no Happy Eyeballs (an
upstream's addresses are tried in the resolver's order, within the connect timeout; docs/providers.md).
"""

from __future__ import annotations

import asyncio
import collections
import ssl
from collections.abc import AsyncIterator
from typing import Any, cast

import httptools
import httpx

__all__ = ["UpstreamTransport"]

_HIGH_WATER = 2**18
"""Unread body bytes above which the connection stops reading from its socket until they are read."""

Origin = tuple[str, str, int]


class _Connection(asyncio.Protocol):
    """One HTTP/1.1 connection to an upstream and the response it is receiving."""

    def __init__(self, transport_pool: UpstreamTransport, origin: Origin) -> None:
        self._pool = transport_pool
        self.origin = origin
        self.transport: asyncio.Transport | None = None
        self.lost = False
        self.idle_since = 0.0
        self._parser = httptools.HttpResponseParser(self)
        self._waiter: asyncio.Future[None] | None = None
        self._paused = False
        self.reset()

    def reset(self) -> None:
        """Ready for the next response on this connection."""
        self.status = 0
        self.headers: list[tuple[bytes, bytes]] = []
        self.headers_done = False
        self.keep_alive = False
        self.complete = False
        self.received_any = False
        self.body: collections.deque[bytes] = collections.deque()
        self.buffered = 0
        self.error: httpx.TransportError | None = None
        self._informational = False

    @property
    def reusable(self) -> bool:
        """Whether the finished exchange leaves the connection fit for another request."""
        return self.complete and self.keep_alive and not self.lost and not self.body

    # asyncio.Protocol
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        """Called by the loop once connected (and after the TLS handshake)."""
        self.transport = cast(asyncio.Transport, transport)  # uvloop's transports do not subclass asyncio's

    def data_received(self, data: bytes) -> None:
        """Parse what arrived; wake the reader."""
        self.received_any = True
        try:
            self._parser.feed_data(data)
        except httptools.HttpParserError as exc:
            self.error = httpx.RemoteProtocolError(f"invalid HTTP response from the upstream: {exc}")
            self.close()
        if self.buffered > _HIGH_WATER and not self._paused and self.transport is not None:
            self._paused = True
            self.transport.pause_reading()
        self._wake()

    def connection_lost(self, exc: Exception | None) -> None:
        """The connection closed: a body delimited by the close is complete, anything else cut short."""
        self.lost = True
        self._pool._forget(self)
        if self.headers_done and not self.complete and self.error is None:
            if self._delimited_by_close():
                self.complete = True
            else:
                self.error = httpx.RemoteProtocolError("the upstream closed the connection mid-response")
        elif not self.headers_done and self.error is None:
            what = "before answering" if not self.received_any else "mid-headers"
            self.error = httpx.RemoteProtocolError(f"the upstream closed the connection {what}")
        self._wake()

    # httptools callbacks
    def on_header(self, name: bytes, value: bytes) -> None:
        """One response header."""
        self.headers.append((name, value))

    def on_headers_complete(self) -> None:
        """The status line and headers are in (a 1xx answer is skipped: the real one follows)."""
        status = self._parser.get_status_code()
        if 100 <= status < 200:
            self._informational = True
            self.headers = []
            return
        self.status = status
        self.keep_alive = self._parser.should_keep_alive()  # asked now: the parser forgets once the body ends
        self.headers_done = True

    def on_body(self, body: bytes) -> None:
        """A piece of the body."""
        self.body.append(body)
        self.buffered += len(body)

    def on_message_complete(self) -> None:
        """The response ended."""
        if self._informational:
            self._informational = False
            return
        self.complete = True

    # for the transport and the body reader
    def send(self, data: bytes) -> None:
        """Write the request."""
        assert self.transport is not None
        self.transport.write(data)

    async def wait(self, timeout: float | None) -> None:
        """Until more arrives, the response ends or the connection fails."""
        self._waiter = asyncio.get_running_loop().create_future()
        try:
            if timeout is None:
                await self._waiter
            else:
                async with asyncio.timeout(timeout):
                    await self._waiter
        except TimeoutError:
            raise httpx.ReadTimeout("the upstream sent nothing within the read timeout") from None
        finally:
            self._waiter = None

    def take_body(self) -> bytes:
        """Every body byte received so far, as one chunk."""
        body = self.body
        data = body.popleft() if len(body) == 1 else b"".join(body)
        body.clear()
        self.buffered = 0
        if self._paused and self.transport is not None:
            self._paused = False
            self.transport.resume_reading()
        return data

    def close(self) -> None:
        """Hang up (the socket closes in the background)."""
        if self.transport is not None:
            self.transport.close()

    def _wake(self) -> None:
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    def _delimited_by_close(self) -> bool:
        names = {name.lower() for name, _ in self.headers}
        return b"content-length" not in names and b"transfer-encoding" not in names


class _ResponseBody(httpx.AsyncByteStream):
    """The streamed body: whatever arrived since the last read, as one chunk per wake-up."""

    def __init__(self, connection: _Connection, read_timeout: float | None) -> None:
        self._connection: _Connection | None = connection
        self._read_timeout = read_timeout

    async def __aiter__(self) -> AsyncIterator[bytes]:
        connection = self._connection
        if connection is None:
            raise httpx.StreamClosed()
        while True:
            if connection.body:
                yield connection.take_body()
            elif connection.complete:
                break
            elif connection.error is not None:
                raise connection.error
            else:
                await connection.wait(self._read_timeout)
        await self.aclose()

    async def aclose(self) -> None:
        """Give the connection back to the pool if the exchange finished cleanly; else hang up."""
        connection, self._connection = self._connection, None
        if connection is not None:
            connection._pool._release(connection)


class UpstreamTransport(httpx.AsyncBaseTransport):
    """An httpx transport for chatgate's upstream calls. See the module docstring."""

    def __init__(
        self,
        *,
        ssl_context: ssl.SSLContext | None = None,
        keepalive_expiry: float = 30.0,
        max_idle: int = 100,
    ) -> None:
        if ssl_context is None:
            ssl_context = httpx.create_ssl_context()
            ssl_context.set_alpn_protocols(["http/1.1"])
        self._ssl_context = ssl_context
        self._keepalive_expiry = keepalive_expiry
        self._max_idle = max_idle
        self._idle: dict[Origin, list[_Connection]] = {}
        self._open: set[_Connection] = set()
        self._closed = False

    @property
    def open_connections(self) -> int:
        """Connections open now, busy or idle."""
        return len(self._open)

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        """Send ``request`` and return its response once the status line and headers are in."""
        if self._closed:
            raise RuntimeError("the upstream transport is closed")
        url = request.url
        if url.scheme not in ("http", "https"):
            raise httpx.UnsupportedProtocol(f"cannot send to {url.scheme!r} URLs")
        timeouts: dict[str, float | None] = request.extensions.get("timeout", {})
        port = url.port or (443 if url.scheme == "https" else 80)
        origin: Origin = (url.scheme, url.host, port)
        message = _request_bytes(request, await request.aread())
        connection = self._reuse(origin)
        if connection is not None:
            connection.send(message)
            try:
                await self._await_headers(connection, timeouts.get("read"))
            except httpx.RemoteProtocolError:
                if connection.received_any:
                    raise
                connection = None  # a stale keep-alive connection: the upstream never saw the request
        if connection is None:
            connection = await self._connect(origin, timeouts.get("connect"))
            connection.send(message)
            await self._await_headers(connection, timeouts.get("read"))
        return httpx.Response(
            connection.status,
            headers=connection.headers,
            stream=_ResponseBody(connection, timeouts.get("read")),
            extensions={"http_version": b"HTTP/1.1"},
        )

    async def aclose(self) -> None:
        """Close every connection, idle or busy."""
        self._closed = True
        for connection in list(self._open):
            connection.close()
        self._idle.clear()

    async def _await_headers(self, connection: _Connection, read_timeout: float | None) -> None:
        try:
            while not connection.headers_done:
                if connection.error is not None:
                    raise connection.error
                await connection.wait(read_timeout)
        except BaseException:
            self._release(connection, hang_up=True)
            raise

    def _reuse(self, origin: Origin) -> _Connection | None:
        idle = self._idle.get(origin)
        if not idle:
            return None
        oldest = asyncio.get_running_loop().time() - self._keepalive_expiry
        while idle:
            connection = idle.pop()
            if connection.lost or connection.idle_since < oldest:
                connection.close()
                continue
            connection.reset()
            return connection
        return None

    async def _connect(self, origin: Origin, timeout: float | None) -> _Connection:
        scheme, host, port = origin
        loop = asyncio.get_running_loop()
        tls: dict[str, Any] = {"ssl": self._ssl_context, "server_hostname": host} if scheme == "https" else {}
        try:
            async with asyncio.timeout(timeout):
                _, connection = await loop.create_connection(lambda: _Connection(self, origin), host, port, **tls)
        except TimeoutError:
            raise httpx.ConnectTimeout(f"connecting to {host}:{port} timed out") from None
        except (OSError, ssl.SSLError) as exc:
            raise httpx.ConnectError(f"cannot connect to {host}:{port}: {exc}") from exc
        self._open.add(connection)
        return connection

    def _release(self, connection: _Connection, *, hang_up: bool = False) -> None:
        """A response is done with ``connection``: keep it for the next request or close it."""
        if hang_up or self._closed or not connection.reusable:
            connection.close()
            return
        idle = self._idle.setdefault(connection.origin, [])
        if len(idle) >= self._max_idle:
            connection.close()
            return
        connection.idle_since = asyncio.get_running_loop().time()
        idle.append(connection)

    def _forget(self, connection: _Connection) -> None:
        self._open.discard(connection)


def _request_bytes(request: httpx.Request, body: bytes) -> bytes:
    """The request line, headers and body as sent (a streamed body goes as one chunk)."""
    headers = request.headers.raw
    lines = [b"%s %s HTTP/1.1" % (request.method.encode("ascii"), request.url.raw_path)]
    chunked = False
    for name, value in headers:
        if b"\r" in name or b"\n" in name or b"\r" in value or b"\n" in value:
            raise httpx.LocalProtocolError("a header holds a line break")
        if name.lower() == b"transfer-encoding" and value.lower() == b"chunked":
            chunked = True
        lines.append(name + b": " + value)
    head = b"\r\n".join(lines) + b"\r\n\r\n"
    if chunked:
        body = (b"%x\r\n%s\r\n0\r\n\r\n" % (len(body), body)) if body else b"0\r\n\r\n"
    return head + body

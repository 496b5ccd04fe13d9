"""The upstream connection pool: many small httpx pools, so opening a stream costs the same at any scale.

httpcore's pool scans every connection and every waiting request each time a request starts or ends
(``AsyncConnectionPool._assign_requests_to_connections``), so with ``n`` streams open each start costs
O(n) and opening ``n`` streams O(n²): 2,000 relayed streams took 14 s of CPU to open in one process.
``ShardedTransport`` keeps that scan short. It hands each request to a *shard*, an ordinary
``httpx.AsyncHTTPTransport`` holding at most ``shard_size`` open responses; when every shard is full it
opens another. A request goes to the shard that most recently had room, so with few streams open all
of them share the first shard and reuse its keep-alive connections exactly as one pool would. A shard
that empties is closed (with its idle connections) once ``spare_shards`` other empty shards are kept.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import httpx

__all__ = ["ShardedTransport"]


class _Shard:
    __slots__ = ("active", "transport")

    def __init__(self, transport: httpx.AsyncHTTPTransport) -> None:
        self.transport = transport
        self.active = 0


class ShardedTransport(httpx.AsyncBaseTransport):
    """An httpx transport spreading requests over small connection pools. See the module docstring."""

    def __init__(
        self,
        *,
        shard_size: int = 32,
        spare_shards: int = 2,
        keepalive_expiry: float = 30.0,
        proxy: str | None = None,
    ) -> None:
        self._shard_size = shard_size
        self._proxy = proxy
        self._spare_shards = spare_shards
        self._limits = httpx.Limits(
            max_connections=None, max_keepalive_connections=shard_size, keepalive_expiry=keepalive_expiry
        )
        self._ssl_context = httpx.create_ssl_context()  # one for all shards: building one costs ~1 ms
        self._shards: list[_Shard] = []
        self._with_room: list[_Shard] = []  # a stack: the shard that last had room is on top
        self._empty = 0
        self._closing: set[asyncio.Task[None]] = set()

    @property
    def shard_count(self) -> int:
        """How many shards are open."""
        return len(self._shards)

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        """Send ``request`` on a shard with room; the shard's slot is freed when the response closes."""
        shard = self._take()
        try:
            response = await shard.transport.handle_async_request(request)
        except BaseException:
            self._release(shard)
            raise
        response.stream = _ShardStream(response.stream, self, shard)
        return response

    async def aclose(self) -> None:
        """Close every shard and its connections."""
        shards, self._shards, self._with_room = self._shards, [], []
        for shard in shards:
            await shard.transport.aclose()
        if self._closing:
            await asyncio.gather(*self._closing, return_exceptions=True)

    def _take(self) -> _Shard:
        if not self._with_room:
            shard = _Shard(httpx.AsyncHTTPTransport(verify=self._ssl_context, limits=self._limits, proxy=self._proxy))
            self._shards.append(shard)
            self._with_room.append(shard)
            self._empty += 1
        shard = self._with_room[-1]
        if shard.active == 0:
            self._empty -= 1
        shard.active += 1
        if shard.active == self._shard_size:
            self._with_room.pop()
        return shard

    def _release(self, shard: _Shard) -> None:
        shard.active -= 1
        if shard.active == self._shard_size - 1:
            self._with_room.append(shard)
        if shard.active == 0:
            self._empty += 1
            if self._empty > self._spare_shards and shard is not self._shards[0]:
                self._drop(shard)

    def _drop(self, shard: _Shard) -> None:
        """Forget an empty shard and close its idle connections in the background."""
        self._empty -= 1
        self._shards.remove(shard)
        self._with_room.remove(shard)
        task = asyncio.get_running_loop().create_task(shard.transport.aclose())
        self._closing.add(task)
        task.add_done_callback(self._closing.discard)


class _ShardStream(httpx.AsyncByteStream):
    """A response body that frees its shard's slot when closed (once)."""

    def __init__(self, stream: httpx.AsyncByteStream | httpx.SyncByteStream, pool: ShardedTransport, shard: _Shard):
        assert isinstance(stream, httpx.AsyncByteStream)
        self._stream = stream
        self._pool: ShardedTransport | None = pool
        self._shard = shard

    def __aiter__(self) -> AsyncIterator[bytes]:
        return self._stream.__aiter__()  # the body's own iterator: no extra hop per chunk

    async def aclose(self) -> None:
        try:
            await self._stream.aclose()
        finally:
            if self._pool is not None:
                pool, self._pool = self._pool, None
                pool._release(self._shard)

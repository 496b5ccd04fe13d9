"""One MCP server's session in this process: connected at start, kept alive, restarted when it dies.

A stdio server is a child process of this chatgate process (its stderr goes to the log, a line at a
time, under ``chatgate.mcp.NAME``); a streamable HTTP server gets one session per process. A background
task owns the session: it connects, lists the tools (again on every ``notifications/tools/list_changed``),
and waits; when the session is lost (the process died, a call or a health ping failed on the
connection) it reconnects with exponential backoff (0.5 s doubling to 30 s). A call made while the
server is down waits for it up to ``timeout_seconds``; every call is cut off after ``timeout_seconds``.
Nothing here is shared across processes.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import threading
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from typing import IO, Any, TextIO, cast

import anyio
import httpx2
from mcp import ClientSession, MCPError, types
from mcp.client.session import IncomingMessage
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from mcp.types import CONNECTION_CLOSED

from chatgate.config import MCPServerConfig
from chatgate.errors import ChatgateError

__all__ = ["MCPConnection", "MCPUnavailable", "list_tools_once", "root_cause"]

logger = logging.getLogger("chatgate.mcp")

FIRST_BACKOFF = 0.5
MAX_BACKOFF = 30.0
HEALTH_INTERVAL = 5.0


def root_cause(exc: BaseException) -> BaseException:
    """The first leaf of anyio's exception groups: what actually went wrong."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    return exc


class MCPUnavailable(ChatgateError):
    """The server cannot be reached now; the message says so without detail."""


@asynccontextmanager
async def _session(
    name: str, config: MCPServerConfig, errlog: IO[str] | None, handler: Any
) -> AsyncIterator[ClientSession]:
    """An initialized session with the server, closed (its process stopped) on exit."""
    if config.command is not None:
        command, *args = config.command
        params = StdioServerParameters(command=command, args=args, env=dict(config.env) or None, cwd=config.cwd)
        transport = stdio_client(params, errlog=cast(TextIO, errlog)) if errlog is not None else stdio_client(params)
    else:
        assert config.url is not None
        client = create_mcp_http_client(
            headers=dict(config.headers), timeout=httpx2.Timeout(config.timeout_seconds, read=300.0)
        )
        transport = _http_transport(config.url, client)
    async with transport as (read, write), ClientSession(read, write, message_handler=handler) as session:
        async with asyncio.timeout(config.timeout_seconds):
            await session.initialize()
        yield session


@asynccontextmanager
async def _http_transport(url: str, client: httpx2.AsyncClient) -> AsyncIterator[Any]:
    async with client, streamable_http_client(url, http_client=client) as streams:
        yield streams


async def _all_tools(session: ClientSession) -> list[types.Tool]:
    tools: list[types.Tool] = []
    cursor: str | None = None
    while True:
        params = types.PaginatedRequestParams(cursor=cursor) if cursor else None
        page = await session.list_tools(params=params)
        tools += page.tools
        cursor = page.next_cursor
        if not cursor or len(tools) > 10_000:
            return tools


async def list_tools_once(name: str, config: MCPServerConfig) -> list[types.Tool]:
    """Connect to the server, list its tools and disconnect (``chatgate check-config --list-tools``)."""
    async with _session(name, config, None, None) as session, asyncio.timeout(config.timeout_seconds):
        return await _all_tools(session)


class _StderrToLog:
    """A pipe the child writes its stderr to; a thread logs each line under the server's logger."""

    def __init__(self, name: str) -> None:
        read_fd, write_fd = os.pipe()
        self.file: IO[str] = os.fdopen(write_fd, "w")
        log = logging.getLogger(f"chatgate.mcp.{name}")

        def pump() -> None:
            with os.fdopen(read_fd, encoding="utf-8", errors="replace") as lines:
                for line in lines:
                    log.info("stderr: %s", line.rstrip()[:2000])

        threading.Thread(target=pump, name=f"mcp-{name}-stderr", daemon=True).start()

    def close(self) -> None:
        self.file.close()


class MCPConnection:
    """The app's session with one MCP server. ``start()`` once, ``aclose()`` on shutdown."""

    def __init__(self, name: str, config: MCPServerConfig) -> None:
        self.name = name
        self.config = config
        self.tools: Mapping[str, types.Tool] = {}
        self.listings = 0  # bumped with each new ``tools``: an agent's tool map is rebuilt when it moves
        self.restarts = 0
        self._session: ClientSession | None = None
        self._ready = asyncio.Event()
        self._lost = asyncio.Event()
        self._relist = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._stderr = _StderrToLog(name) if config.command is not None else None

    def start(self) -> None:
        """Start connecting in the background."""
        self._task = asyncio.create_task(self._keep_connected(), name=f"mcp-{self.name}")

    async def aclose(self) -> None:
        """Close the session and stop the server's process."""
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
        if self._stderr is not None:
            self._stderr.close()

    async def _on_message(self, message: IncomingMessage) -> None:
        if isinstance(message, types.ToolListChangedNotification):
            self._relist.set()
        elif isinstance(message, Exception):
            logger.warning("mcp server %r: transport error: %s", self.name, message)

    async def _keep_connected(self) -> None:
        backoff = FIRST_BACKOFF
        errlog = self._stderr.file if self._stderr is not None else None
        while True:
            try:
                async with _session(self.name, self.config, errlog, self._on_message) as session:
                    await self._list(session)
                    self._session = session
                    self._lost.clear()
                    self._ready.set()
                    logger.info("mcp server %r: connected, %d tool(s)", self.name, len(self.tools))
                    backoff = FIRST_BACKOFF
                    await self._serve(session)
            except asyncio.CancelledError:
                raise
            except BaseException as exc:  # anyio wraps failures in exception groups
                cause = root_cause(exc)
                logger.warning("mcp server %r: session ended: %s: %s", self.name, type(cause).__name__, cause)
            finally:
                self._ready.clear()
                self._session = None
            self.restarts += 1
            logger.warning("mcp server %r: reconnecting in %.1fs", self.name, backoff)
            await asyncio.sleep(backoff)
            backoff = min(backoff * 2, MAX_BACKOFF)

    async def _list(self, session: ClientSession) -> None:
        async with asyncio.timeout(self.config.timeout_seconds):
            tools = await _all_tools(session)
        self.tools = {tool.name: tool for tool in tools}
        self.listings += 1

    async def _serve(self, session: ClientSession) -> None:
        """Until the session is lost: re-list on change, ping now and then."""
        while True:
            waiters = [asyncio.ensure_future(event.wait()) for event in (self._lost, self._relist)]
            try:
                await asyncio.wait(waiters, timeout=HEALTH_INTERVAL, return_when=asyncio.FIRST_COMPLETED)
            finally:
                for waiter in waiters:
                    waiter.cancel()
            if self._lost.is_set():
                return
            if self._relist.is_set():
                self._relist.clear()
                await self._list(session)
                logger.info("mcp server %r: tool list changed, %d tool(s)", self.name, len(self.tools))
                continue
            async with asyncio.timeout(self.config.timeout_seconds):
                await session.send_ping()

    @property
    def connected(self) -> bool:
        """Whether the session is open and its tools listed."""
        return self._ready.is_set()

    async def wait_connected(self) -> bool:
        """Whether the session is open, after waiting up to ``connect_wait_seconds`` for it."""
        if not self._ready.is_set():
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(self.config.connect_wait_seconds):
                    await self._ready.wait()
        return self._ready.is_set()

    async def ping(self) -> None:
        """Raise unless the server answers a ping now (``/readyz``)."""
        session = self._session
        if session is None:
            raise MCPUnavailable(f"mcp server {self.name!r} is not connected")
        await session.send_ping()

    async def call(self, tool: str, arguments: dict[str, Any]) -> types.CallToolResult:
        """Call ``tool``; raises ``TimeoutError`` after ``timeout_seconds`` or ``MCPUnavailable``."""
        async with asyncio.timeout(self.config.timeout_seconds):
            await self._ready.wait()
            session = self._session
            if session is None:
                raise MCPUnavailable(f"mcp server {self.name!r} is not connected")
            try:
                return await session.call_tool(tool, arguments)
            except (MCPError, anyio.ClosedResourceError, anyio.BrokenResourceError, anyio.EndOfStream) as exc:
                if isinstance(exc, MCPError) and not _connection_lost(exc):
                    raise
                self._lost.set()  # reconnect now, not at the next health ping
                raise MCPUnavailable(f"mcp server {self.name!r} closed the connection") from exc


def _connection_lost(exc: MCPError) -> bool:
    return exc.error.code == CONNECTION_CLOSED

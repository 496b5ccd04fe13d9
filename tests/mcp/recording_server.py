"""A tiny streamable HTTP MCP server that records what reaches it: each request's headers, and its sessions.

Written with the official ``mcp`` SDK (``MCPServer``, formerly FastMCP), served by uvicorn in this test
process on a free loopback port. The reference server cannot show a client's request headers, so this
one answers for them: ``requests`` holds every HTTP request's headers, in order. A request without an
``mcp-session-id`` header is the one that opens a session (``initialize``), so ``sessions_opened``
counts sessions. Its one tool, ``shout``, answers with its text in capitals.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

from mcp.server.mcpserver import MCPServer
from starlette.types import ASGIApp, Receive, Scope, Send

from tests.conftest import LiveServer

__all__ = ["RecordingServer", "recording_server"]


@dataclass
class RecordingServer:
    """What the server saw: its MCP URL and each HTTP request's headers (lower-case names)."""

    url: str = ""
    requests: list[dict[str, str]] = field(default_factory=list)

    @property
    def sessions_opened(self) -> int:
        """Requests that opened a session: those carrying no ``mcp-session-id``."""
        return sum(1 for headers in self.requests if "mcp-session-id" not in headers)

    @property
    def session_ids(self) -> set[str]:
        """The distinct sessions requests were made in."""
        return {headers["mcp-session-id"] for headers in self.requests if "mcp-session-id" in headers}


def _recorded(app: ASGIApp, record: RecordingServer) -> ASGIApp:
    async def recording(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            record.requests.append({k.decode("latin-1"): v.decode("latin-1") for k, v in scope["headers"]})
        await app(scope, receive, send)

    return recording


@contextmanager
def recording_server() -> Iterator[RecordingServer]:
    """Serve the recording MCP server until the block ends; yields its record (``url`` set)."""
    server = MCPServer("recording")

    @server.tool()
    def shout(text: str) -> str:
        """``text`` in capitals."""
        return text.upper()

    record = RecordingServer()
    live = LiveServer(_recorded(server.streamable_http_app(), record))
    live.start()
    record.url = f"{live.url}/mcp"
    try:
        yield record
    finally:
        live.stop()

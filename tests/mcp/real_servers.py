"""The real MCP servers the tests start: the protocol's reference server and the PyPI time server.

``scripts/mcp-test-servers.sh`` installs them: ``@modelcontextprotocol/server-everything`` into
tests/mcp/node_modules (from package-lock.json) and ``mcp-server-time`` into its own venv,
tests/mcp/.venv-time (it pins its own ``mcp``, which must not mix with chatgate's).
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.processes import children, command_line, stop_process

__all__ = [
    "calls_on_server",
    "child_pids",
    "counted",
    "everything_http",
    "everything_stdio",
    "time_stdio",
]

HERE = Path(__file__).parent
EVERYTHING = HERE / "node_modules" / "@modelcontextprotocol" / "server-everything" / "dist" / "index.js"
TIME_SERVER = HERE / ".venv-time" / "bin" / "mcp-server-time"


def _require(path: Path) -> Path:
    if not path.exists():
        pytest.fail(f"{path} is missing: run scripts/mcp-test-servers.sh (scripts/test.sh does)")
    return path


def everything_stdio() -> list[str]:
    """The command of the reference server over stdio."""
    return ["node", str(_require(EVERYTHING)), "stdio"]


def time_stdio() -> list[str]:
    """The command of ``mcp-server-time`` over stdio."""
    return [str(_require(TIME_SERVER))]


def counted(command: list[str], log: Path) -> list[str]:
    """``command`` behind the tap that logs every ``tools/call`` reaching it (tests/mcp/count_calls.py)."""
    return [sys.executable, str(HERE / "count_calls.py"), str(log), "--", *command]


def calls_on_server(log: Path) -> list[dict[str, Any]]:
    """The tool calls that reached the server behind ``counted``."""
    if not log.exists():
        return []
    return [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines()]


def child_pids(marker: str) -> list[int]:
    """This process's children whose command line holds ``marker``."""
    return [pid for pid in children(os.getpid()) if marker in command_line(pid)]


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


@contextmanager
def everything_http() -> Iterator[str]:
    """The reference server over streamable HTTP on a free loopback port; yields its MCP URL."""
    port = _free_port()
    process = subprocess.Popen(
        ["node", str(_require(EVERYTHING)), "streamableHttp"],
        env={**os.environ, "PORT": str(port)},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    url = f"http://127.0.0.1:{port}/mcp"
    try:
        for _ in range(200):
            try:
                httpx.get(url, timeout=1)
                break
            except httpx.TransportError:
                time.sleep(0.05)
        yield url
    finally:
        stop_process(process)

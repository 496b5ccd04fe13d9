"""Shared test factories: a live chatgate on a loopback port, and the real Node UI clients."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import uvicorn
from starlette.types import ASGIApp

from chatgate.config import Config, parse_config
from chatgate.web.app import create_app
from tests.hang_guard import HangGuard
from tests.markers import apply_markers
from tests.oidc_provider import OpenIDProvider, running_oidc_provider
from tests.processes import adopt_orphans, command_line, descendants, kill_all, kill_tree, running, wait_gone
from tests.servers import _free_port, running_postgres, running_redis

CLIENTS_DIR = Path(__file__).parent / "clients"
LEFTOVER_WAIT_SECONDS = 10
STARTUP_SECONDS = 120  # how long a server may take to start before the test fails (20 s was too short under load)


class _PromptServer(uvicorn.Server):
    """uvicorn's server, whose main loop ends as soon as it is told to, not at its next 0.1 s tick, and whose
    shutdown does not pause for connections when none is open.

    Tests start and stop hundreds of servers: the tick (~0.05 s) and the pause (0.1 s) were most of a stop.
    """

    _loop: asyncio.AbstractEventLoop | None = None
    _wake: asyncio.Event | None = None

    async def main_loop(self) -> None:
        """uvicorn's loop (``on_tick`` every 0.1 s), woken early by ``exit_now``."""
        self._wake = asyncio.Event()
        self._loop = asyncio.get_running_loop()
        counter = 0
        should_exit = await self.on_tick(counter)
        while not should_exit:
            counter = (counter + 1) % 864000
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wake.wait(), 0.1)
            should_exit = await self.on_tick(counter)

    async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
        """uvicorn's shutdown; with no connection open, without its 0.1 s pause for connections to close."""
        if self.server_state.connections or self.server_state.tasks:
            await super().shutdown(sockets)
            return
        for server in self.servers:
            server.close()
        for sock in sockets or []:
            sock.close()
        if not self.force_exit:
            await self.lifespan.shutdown()

    def exit_now(self) -> None:
        """Ask the server to shut down, from any thread, and wake its loop to see it."""
        self.should_exit = True
        if self._loop is not None and self._wake is not None:
            with contextlib.suppress(RuntimeError):  # the loop has already closed
                self._loop.call_soon_threadsafe(self._wake.set)


class LiveServer:
    """chatgate running under uvicorn in a background thread, on 127.0.0.1 and a free port."""

    def __init__(self, app: ASGIApp) -> None:
        self._sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._sock.bind(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self._sock.getsockname()[1]}"
        self._server = _PromptServer(uvicorn.Config(app, log_level="warning", lifespan="on"))
        self._thread = threading.Thread(target=self._server.run, kwargs={"sockets": [self._sock]}, daemon=True)

    def start(self) -> None:
        self._thread.start()
        deadline = time.monotonic() + STARTUP_SECONDS
        while not self._server.started:
            if time.monotonic() > deadline or not self._thread.is_alive():
                raise RuntimeError("chatgate did not start")
            time.sleep(0.01)

    def stop(self) -> None:
        self.begin_stop()
        self._thread.join(timeout=10)
        self._sock.close()

    def begin_stop(self) -> None:
        """Tell the server to shut down without waiting for it (``stop`` waits)."""
        self._server.exit_now()


@pytest.fixture(scope="session", autouse=True)
def no_process_left() -> Iterator[None]:
    """Fail the session (an error at the last test's teardown) if a process a test started still runs at its end.

    Set up before any other session fixture, so torn down after all of them: their servers have stopped by
    then. Orphans count too: the test process adopts them (a worker whose supervisor a test killed).
    Under xdist each worker checks its own. What is left is reported, then killed.
    """
    adopt_orphans()
    yield
    left = [pid for pid in descendants(os.getpid()) if running(pid)]
    left = wait_gone(left, LEFTOVER_WAIT_SECONDS)  # a process stopped a moment ago may be on its way out
    report = [f"{pid} {command_line(pid)}" for pid in left]
    kill_all(left)
    assert not report, "processes started by the tests were still running at the end:\n" + "\n".join(report)


_HANG_GUARD: HangGuard | None = None


def pytest_configure(config: pytest.Config) -> None:
    """Set up the hang guard (tests/hang_guard.py) while stderr is still the run's own."""
    global _HANG_GUARD
    _HANG_GUARD = HangGuard()


def pytest_unconfigure(config: pytest.Config) -> None:
    """Close the hang guard's copy of stderr."""
    if _HANG_GUARD is not None:
        _HANG_GUARD.close()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> Iterator[object]:
    """Run each test (setup, call and teardown) under the hang guard."""
    assert _HANG_GUARD is not None
    _HANG_GUARD.arm(item)
    try:
        return (yield)
    finally:
        _HANG_GUARD.disarm()


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Mark each test with the parts it needs: ``-m "not browser"`` and friends (tests/markers.py)."""
    apply_markers(items)


def make_config(agents: dict[str, dict[str, Any]], **top: Any) -> Config:
    """A validated Config from plain dicts, as if read from a file in this directory.

    Agents write no thread titles unless the test names ``titles``: a title call after a first answer
    would take a scripted upstream's next reply and count among its requests (tests/threads/test_titles.py
    turns them on).
    """
    agents = {name: {"titles": False, **agent} for name, agent in agents.items()}
    return parse_config({"agents": agents, **top}, base_dir=Path(__file__).parent)


@pytest.fixture
def serve() -> Iterator[Callable[[Config], str]]:
    """Start chatgate with a config; returns its base URL. Every server started is stopped after the test."""
    servers: list[LiveServer] = []

    def start(config: Config) -> str:
        server = LiveServer(create_app(config))
        server.start()
        servers.append(server)
        return server.url

    try:
        yield start
    finally:
        for server in servers:  # all shut down at once, each then waited for
            server.begin_stop()
        for server in servers:
            server.stop()


ChatgateProcess = Callable[..., tuple[str, "subprocess.Popen[bytes]"]]


@pytest.fixture
def chatgate_process(tmp_path: Path) -> Iterator[ChatgateProcess]:
    """Start the installed ``chatgate serve`` command with extra arguments; returns ``(url, process)``.

    It returns once the process has bound its port and ``/healthz`` answers, and fails the test with the
    server's log if it never does. Every process started is killed after the test, with its workers
    (``tests/processes.py``); each one's log is printed then, shown by pytest when the test failed.
    """
    processes: list[tuple[subprocess.Popen[bytes], Path]] = []

    def start(*arguments: str) -> tuple[str, subprocess.Popen[bytes]]:
        for _ in range(BIND_ATTEMPTS):
            port = _free_port()
            log = tmp_path / f"chatgate-{port}.log"
            with log.open("wb") as output:  # the child keeps its own copy of the descriptor
                process = subprocess.Popen(_serve_command(port, arguments), stdout=output, stderr=output)
            processes.append((process, log))
            url = f"http://127.0.0.1:{port}"
            if _wait_until_serving(url, port, process, log):
                return url, process
        pytest.fail(f"chatgate serve found no free port in {BIND_ATTEMPTS} tries")

    try:
        yield start
    finally:
        for process, log in processes:
            kill_tree(process)
            print(f"--- {log.name} ---\n{log.read_text(errors='replace')[-LOG_TAIL_CHARS:]}")


BIND_ATTEMPTS = 3
LOG_TAIL_CHARS = 6000


def _serve_command(port: int, arguments: tuple[str, ...]) -> list[str]:
    return [str(Path(sys.executable).with_name("chatgate")), "serve", "--port", str(port), *arguments]


def _wait_until_serving(url: str, port: int, process: subprocess.Popen[bytes], log: Path) -> bool:
    """True once this process listens on ``port`` and answers; False if another process took the port.

    A port probed free can be taken before the server binds it; then ``/healthz`` could be answered by
    whoever took it, so the listening socket is first checked to be this process's own.
    """
    deadline = time.monotonic() + STARTUP_SECONDS
    while True:
        if process.poll() is not None:
            output = log.read_text(errors="replace")
            if "address already in use" in output.lower():
                return False
            pytest.fail(f"chatgate serve did not start:\n{output}")
        if _listens(process.pid, port):
            try:
                httpx.get(f"{url}/healthz", timeout=STARTUP_SECONDS)
                return True
            except httpx.TransportError:  # (workers) listening before any worker accepts
                pass
        if time.monotonic() > deadline:
            pytest.fail(f"chatgate serve did not start in {STARTUP_SECONDS} s:\n{log.read_text(errors='replace')}")
        time.sleep(0.1)


def _listens(pid: int, port: int) -> bool:
    """Whether process ``pid`` holds a TCP socket listening on ``port`` (read from /proc)."""
    listening = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        with contextlib.suppress(FileNotFoundError):
            for row in Path(table).read_text().splitlines()[1:]:
                fields = row.split()
                if int(fields[1].rsplit(":", 1)[1], 16) == port and fields[3] == "0A":  # 0A: LISTEN
                    listening.add(f"socket:[{fields[9]}]")
    if not listening:
        return False
    with contextlib.suppress(FileNotFoundError, ProcessLookupError):
        for descriptor in Path(f"/proc/{pid}/fd").iterdir():
            with contextlib.suppress(OSError):
                if os.readlink(descriptor) in listening:
                    return True
    return False


def run_node_client(script: str, request: dict[str, Any], timeout: float = 60) -> Any:
    """Run ``tests/clients/<script>`` with ``request`` as JSON on stdin; return its JSON stdout.

    A client that exits non-zero (a rejected stream, a schema error, a missing header) fails the test
    with its stderr.
    """
    if not (CLIENTS_DIR / "node_modules").is_dir():
        pytest.fail("tests/clients/node_modules is missing: run scripts/test.sh, which installs the Node clients")
    completed = subprocess.run(
        ["node", str(CLIENTS_DIR / script)],
        input=json.dumps(request),
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    if completed.returncode != 0:
        pytest.fail(f"{script} failed (exit {completed.returncode}):\n{completed.stderr}\n{completed.stdout}")
    return json.loads(completed.stdout)


def check_ag_ui_events(events: list[dict[str, Any]]) -> None:
    """Fail unless @ag-ui/core's ``EventSchema`` accepts every event, strictly (tests/clients/ag_ui_strict.mjs)."""
    problems = run_node_client("ag_ui_validate.mjs", {"events": events})["problems"]
    assert problems == [], problems


def check_use_chat_stream(version: int, text: str) -> list[str]:
    """Fail unless ``ai`` ``version``'s own ``uiMessageChunkSchema`` accepts every chunk; their types."""
    result = run_node_client("vercel_ai_validate.mjs", {"version": version, "text": text})
    assert result["problems"] == [], result["problems"]
    types: list[str] = result["types"]
    return types


@pytest.fixture(scope="session")
def redis_url() -> Iterator[str]:
    """A real ``redis-server`` on loopback for the whole session (tests use their own key prefixes or flush)."""
    with running_redis() as url:
        yield url


@pytest.fixture(scope="session")
def postgres_url() -> Iterator[str]:
    """A real PostgreSQL server on loopback for the whole session."""
    with running_postgres() as url:
        yield url


@pytest.fixture(scope="session")
def oidc_provider() -> Iterator[OpenIDProvider]:
    """A real OpenID provider (npm ``oidc-provider``) on loopback for the whole session."""
    with running_oidc_provider() as provider:
        yield provider

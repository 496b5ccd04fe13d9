"""Real Redis and PostgreSQL servers for the tests: started on loopback, on free ports, stopped by PID.

``scripts/test.sh`` installs both (Debian's ``redis-server`` and ``postgresql``); a test that needs one
asks for the session fixture ``redis_url`` or ``postgres_url`` in ``conftest.py``. Nothing is skipped:
a missing server is a failure.
"""

from __future__ import annotations

import glob
import os
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from tests.processes import kill_tree, stop_process

__all__ = ["PostgresServer", "postgres_server", "running_postgres", "running_redis"]


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _wait_for_port(port: int, process: subprocess.Popen[bytes], what: str, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"{what} exited with {process.returncode}")
        with socket.socket() as sock:
            if sock.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.05)
    raise RuntimeError(f"{what} did not listen on 127.0.0.1:{port} within {timeout} s")


@contextmanager
def running_redis() -> Iterator[str]:
    """A throwaway ``redis-server`` on 127.0.0.1 (no persistence); yields its ``redis://`` URL."""
    binary = shutil.which("redis-server")
    if binary is None:
        raise RuntimeError("redis-server is not installed: run ./scripts/test.sh, which installs it")
    port = _free_port()
    with tempfile.TemporaryDirectory(prefix="chatgate-redis-") as workdir:
        args = [binary, "--bind", "127.0.0.1", "--port", str(port), "--save", "", "--appendonly", "no"]
        process = subprocess.Popen([*args, "--dir", workdir], stdout=subprocess.DEVNULL)
        try:
            _wait_for_port(port, process, "redis-server")
            yield f"redis://127.0.0.1:{port}/0"
        finally:
            stop_process(process)


def _postgres_bin(name: str) -> str:
    found = sorted(glob.glob(f"/usr/lib/postgresql/*/bin/{name}"))
    if found:
        return found[-1]
    binary = shutil.which(name)
    if binary is None:
        raise RuntimeError(f"PostgreSQL's {name} is not installed: run ./scripts/test.sh, which installs it")
    return binary


def _as_postgres_user() -> list[str]:
    # PostgreSQL refuses to run as root; CI runs as root, a developer may not.
    return ["runuser", "-u", "postgres", "--"] if os.geteuid() == 0 else []


class PostgresServer:
    """A throwaway PostgreSQL cluster a test may stop before it ends (a store outage)."""

    def __init__(self, url: str, command: list[str], data: Path) -> None:
        self.url = url
        self._command = command
        self._data = data
        self._process = subprocess.Popen(command)

    def start(self) -> None:
        """Start the stopped cluster again, on the same port and data; returns once it listens."""
        if self._process.poll() is None:
            return
        self._process = subprocess.Popen(self._command)
        self.wait_ready()

    def wait_ready(self) -> None:
        """Return once the cluster accepts sessions (it listens a moment before: "starting up")."""
        port = self.url.rsplit(":", 1)[1].split("/", 1)[0]
        _wait_for_port(int(port), self._process, "postgres")
        ready = [_postgres_bin("pg_isready"), "-q", "-h", "127.0.0.1", "-p", port, "-U", "chatgate", "-d", "postgres"]
        deadline = time.monotonic() + 30
        while subprocess.run(ready, check=False).returncode != 0:
            if time.monotonic() > deadline or self._process.poll() is not None:
                raise RuntimeError(f"postgres on port {port} did not accept sessions within 30 s")
            time.sleep(0.05)

    def stop(self) -> None:
        """Fast shutdown (``pg_ctl -m fast``): open sessions are cut, as when the database goes down."""
        if self._process.poll() is None:
            command = [*_as_postgres_user(), _postgres_bin("pg_ctl"), "stop", "-m", "fast", "-D", str(self._data)]
            subprocess.run(command, check=False, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            try:
                self._process.wait(timeout=20)
            except subprocess.TimeoutExpired:  # SIGKILL reaches runuser only: postgres below it, by PID
                kill_tree(self._process)


@contextmanager
def running_postgres() -> Iterator[str]:
    """A throwaway PostgreSQL cluster on 127.0.0.1 (trust auth, fsync off); yields its ``postgresql://`` URL."""
    with postgres_server() as server:
        yield server.url


@contextmanager
def postgres_server() -> Iterator[PostgresServer]:
    """``running_postgres``, yielding the server so a test can stop it."""
    port = _free_port()
    workdir = Path(tempfile.mkdtemp(prefix="chatgate-pg-"))
    data = workdir / "data"
    prefix = _as_postgres_user()
    if prefix:
        shutil.chown(workdir, "postgres", "postgres")
    try:
        subprocess.run(
            [*prefix, _postgres_bin("initdb"), "-D", str(data), "-U", "chatgate", "-A", "trust", "-E", "UTF8"],
            check=True,
            stdout=subprocess.DEVNULL,
        )
        settings = ["listen_addresses=127.0.0.1", f"port={port}", f"unix_socket_directories={workdir}"]
        settings += ["fsync=off", "synchronous_commit=off", "full_page_writes=off"]
        settings = [arg for setting in settings for arg in ("-c", setting)]
        command = [*prefix, _postgres_bin("postgres"), "-D", str(data), *settings]
        server = PostgresServer(f"postgresql://chatgate@127.0.0.1:{port}/postgres", command, data)
        try:
            server.wait_ready()
            yield server
        finally:
            server.stop()
    finally:
        shutil.rmtree(workdir, ignore_errors=True)

"""The chatgate setups ``bench/compare.py`` measures side by side, and the requests each one is sent.

The same agent (builtin:echo, or relaying the fake upstream) five ways:

- stateless (``conversations = "client"``), as shipped;
- with keys and limits: one ``[[keys]]`` entry (its SHA-256, ``rpm`` and ``max_concurrent_streams``
  set far above what the benchmark reaches), the request limits of ``[server]`` set, ``cors_origins``;
  every request carries the key and an allowed ``Origin``;
- on a server-held thread in SQLite (a file in the temp dir) or in PostgreSQL (a real server);
- in production: a thread in PostgreSQL, keys and limits, and ``[server] redis_url`` on a real Redis, so
  rate and stream limits and the run log go through Redis;
- traced: stateless, with ``[telemetry]`` at ``sample_ratio = 1.0`` exporting every span over OTLP/HTTP
  to ``otlp_sink.py`` (a collector that keeps nothing, in its own process).

A stored-thread request always starts a new thread: its ids hold ``UNIQUE``, which ``load.py`` replaces
per request. PostgreSQL and Redis are started by ``Services`` on first use (tests/servers.py: loopback,
free ports, stopped by PID).
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from harness import ROOT
from load import UNIQUE
from stream_cpu import ACCESS_HEADERS, ACCESS_KEY, ORIGIN

sys.path.insert(0, str(ROOT))  # tests/servers.py: the real Redis and PostgreSQL the tests use
from tests.servers import _free_port, _stop, _wait_for_port, running_postgres, running_redis

# Far above what the benchmark reaches (concurrency 10): they are checked on every request, never hit.
KEY_RPM = 1_000_000
KEY_MAX_STREAMS = 1000
REQUEST_LIMITS = {
    "max_body_bytes": 256 * 1024,
    "max_messages": 100,
    "max_parts_per_message": 20,
    "max_text_chars": 100_000,
    "max_tools": 16,
}


@dataclass(frozen=True)
class Setup:
    """One way of configuring chatgate; ``label`` is what a variant's name adds ("" when stateless)."""

    label: str
    server: str
    store: Literal["sqlite", "postgres"] | None = None
    keys: bool = False
    redis: bool = False
    traced: bool = False

    @property
    def thread(self) -> bool:
        """Whether the agent keeps a server-held thread."""
        return self.store is not None

    def headers(self) -> dict[str, str]:
        """The headers every request to this setup carries."""
        return dict(ACCESS_HEADERS) if self.keys else {}


STATELESS = Setup("", "chatgate")
SETUPS = (
    STATELESS,
    Setup("keys+limits", "chatgate-keys", keys=True),
    Setup("thread SQLite", "chatgate-sqlite", store="sqlite"),
    Setup("thread Postgres", "chatgate-postgres", store="postgres"),
    Setup("thread+keys+Redis", "chatgate-production", store="postgres", keys=True, redis=True),
    Setup("traced", "chatgate-traced", traced=True),
)


class Services:
    """PostgreSQL and Redis, each started the first time a server asks for it; ``close`` stops both."""

    def __init__(self) -> None:
        self._stack = ExitStack()
        self._postgres: str | None = None
        self._redis: str | None = None
        self._otlp_sink: str | None = None

    def postgres_url(self) -> str:
        if self._postgres is None:
            with children_quiet():  # PostgreSQL logs every start, checkpoint and stop to its stderr
                self._postgres = self._stack.enter_context(running_postgres())
        return self._postgres

    def redis_url(self) -> str:
        if self._redis is None:
            self._redis = self._stack.enter_context(running_redis())
        return self._redis

    def otlp_sink_url(self) -> str:
        if self._otlp_sink is None:
            port = _free_port()
            sink = subprocess.Popen([sys.executable, str(Path(__file__).parent / "otlp_sink.py"), str(port)])
            self._stack.callback(_stop, sink)
            _wait_for_port(port, sink, "otlp_sink.py")
            self._otlp_sink = f"http://127.0.0.1:{port}"
        return self._otlp_sink

    def close(self) -> None:
        self._stack.close()


@contextmanager
def children_quiet() -> Iterator[None]:
    """Processes started in the block write their stderr to /dev/null (this process's own is restored)."""
    sys.stderr.flush()
    saved = os.dup(2)
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 2)
    try:
        yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)
        os.close(devnull)


def toml_table(name: str, values: dict[str, object]) -> str:
    """A TOML table of strings, numbers and lists of strings (JSON writes those as TOML reads them)."""
    return f"[{name}]\n" + "".join(f"{key} = {json.dumps(value)}\n" for key, value in values.items())


def setup_config(base: str, setup: Setup, services: Services, sqlite_file: Path) -> str:
    """``base`` (a config whose last table is its one agent) turned into ``setup``."""
    assert base.rstrip().rsplit("\n[", 1)[-1].startswith("agents."), "the agent's table must come last"
    tables = [base.rstrip() + ('\nconversations = "server"\n' if setup.thread else "\n")]
    server: dict[str, object] = {}
    if setup.store == "sqlite":
        tables.append(toml_table("store", {"url": f"sqlite:///{sqlite_file}"}))
    elif setup.store == "postgres":
        tables.append(toml_table("store", {"url": services.postgres_url()}))
    if setup.keys:
        server |= {**REQUEST_LIMITS, "cors_origins": [ORIGIN]}
        digest = hashlib.sha256(ACCESS_KEY.encode()).hexdigest()
        key = {"id": "bench", "sha256": digest, "rpm": KEY_RPM, "max_concurrent_streams": KEY_MAX_STREAMS}
        tables.append(toml_table("[keys]", key))
    if setup.redis:
        server["redis_url"] = services.redis_url()
    if server:
        tables.append(toml_table("server", server))
    if setup.traced:
        tables.append(toml_table("telemetry", {"otlp_endpoint": services.otlp_sink_url(), "sample_ratio": 1.0}))
    return "\n".join(tables)


def ag_ui_body(text: str, thread: bool = False) -> bytes:
    """A complete AG-UI RunAgentInput (pydantic-ai's adapter requires every field); a new thread if ``thread``."""
    unique = UNIQUE.decode()
    thread_id, run_id = (f"t-{unique}", f"r-{unique}") if thread else ("t1", "r1")
    message = {"id": "u1", "role": "user", "content": text}
    run = {"threadId": thread_id, "runId": run_id, "state": {}, "messages": [message], "tools": [], "context": []}
    return json.dumps({**run, "forwardedProps": {}}).encode()


def use_chat_body(text: str, thread: bool = False) -> bytes:
    """useChat's request: the whole history, or for a stored thread a new chat id and the newest message."""
    message = {"id": "u1", "role": "user", "parts": [{"type": "text", "text": text}]}
    if thread:
        return json.dumps({"id": f"c-{UNIQUE.decode()}", "message": message, "trigger": "submit-message"}).encode()
    return json.dumps({"id": "chat1", "messages": [message], "trigger": "submit-message"}).encode()

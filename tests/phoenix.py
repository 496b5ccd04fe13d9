"""A real trace backend for the telemetry tests: Arize Phoenix on loopback, read back through its REST API.

``scripts/install-phoenix.sh`` installs Phoenix once into a virtual environment of its own (cached
outside the clone); ``running_phoenix`` starts ``phoenix serve`` with its SQLite default in a temporary
working directory, on free loopback ports (HTTP + OTLP/HTTP, and gRPC), and stops it by PID.
"""

from __future__ import annotations

import os
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

from tests.processes import stop_process
from tests.servers import _free_port

__all__ = ["Phoenix", "Span", "running_phoenix"]

_INSTALL = Path(__file__).parent.parent / "scripts" / "install-phoenix.sh"


@dataclass(frozen=True)
class Span:
    """One span as Phoenix stored it."""

    name: str
    span_id: str
    parent_id: str | None
    status: str
    status_message: str
    attributes: dict[str, Any]
    events: list[dict[str, Any]]


class Phoenix:
    """A running Phoenix: ``url`` takes OTLP/HTTP at ``/v1/traces``; ``spans`` reads a trace back."""

    def __init__(self, url: str) -> None:
        self.url = url

    def spans(self, trace_id: str, count: int, timeout: float = 60.0) -> list[Span]:
        """The spans of ``trace_id`` once Phoenix has ``count`` of them (fails if it never does)."""
        deadline = time.monotonic() + timeout
        found: list[Span] = []
        while time.monotonic() < deadline:
            found = self._read(trace_id)
            if len(found) >= count:
                return found
            time.sleep(0.2)
        raise AssertionError(f"Phoenix has {len(found)} spans of trace {trace_id}, expected {count}: {found}")

    def _read(self, trace_id: str) -> list[Span]:
        spans: list[Span] = []
        cursor: str | None = None
        while True:
            params: dict[str, Any] = {"limit": 1000, **({"cursor": cursor} if cursor else {})}
            response = httpx.get(f"{self.url}/v1/projects/default/spans", params=params, timeout=30)
            if response.status_code == 404:  # no span arrived yet: the project does not exist
                return []
            response.raise_for_status()
            body = response.json()
            for item in body["data"]:
                if item["context"]["trace_id"] == trace_id:
                    spans.append(
                        Span(
                            item["name"],
                            item["context"]["span_id"],
                            item.get("parent_id"),
                            item["status_code"],
                            item.get("status_message") or "",
                            item["attributes"],
                            item.get("events") or [],
                        )
                    )
            cursor = body.get("next_cursor")
            if not cursor:
                return spans


@contextmanager
def running_phoenix() -> Iterator[Phoenix]:
    """``phoenix serve`` on 127.0.0.1 with a throwaway SQLite working directory."""
    found = subprocess.run(["bash", str(_INSTALL), "--path"], capture_output=True, text=True)
    if found.returncode != 0:
        raise RuntimeError(f"Phoenix is not installed: run ./scripts/test.sh ({found.stderr.strip()})")
    port, grpc_port = _free_port(), _free_port()
    with tempfile.TemporaryDirectory(prefix="chatgate-phoenix-") as workdir:
        environ = {
            **os.environ,
            "PHOENIX_HOST": "127.0.0.1",
            "PHOENIX_PORT": str(port),
            "PHOENIX_GRPC_PORT": str(grpc_port),
            "PHOENIX_WORKING_DIR": workdir,
            "PHOENIX_TELEMETRY_ENABLED": "false",
        }
        with open(Path(workdir) / "phoenix.log", "wb") as log:
            process = subprocess.Popen(
                [found.stdout.strip(), "serve"], env=environ, stdout=log, stderr=subprocess.STDOUT
            )
            url = f"http://127.0.0.1:{port}"
            try:
                _wait_healthy(url, process, Path(workdir) / "phoenix.log")
                yield Phoenix(url)
            finally:
                stop_process(process)


STARTUP_SECONDS = 300.0
"""How long Phoenix may take to serve: about 15 s on an idle 2-core machine, past 120 s at load 8."""


def _wait_healthy(url: str, process: subprocess.Popen[bytes], log: Path, timeout: float = STARTUP_SECONDS) -> None:
    deadline = time.monotonic() + timeout
    with httpx.Client(timeout=2) as client:  # one client: each new one builds an SSL context, costly under load
        while time.monotonic() < deadline:
            if process.poll() is not None:
                raise RuntimeError(f"phoenix exited with {process.returncode}: {log.read_text()[-2000:]}")
            try:
                if client.get(f"{url}/healthz").status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            time.sleep(0.25)
    raise RuntimeError(f"phoenix did not answer {url}/healthz within {timeout} s: {log.read_text()[-2000:]}")

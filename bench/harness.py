"""What the benchmarks share: server subprocesses, their CPU time, the request driver and the report.

CPU time is read from /proc for the server's process only (the client that drives it and any fake
upstream are other processes), before and after a batch of sequential requests over loopback.
"""

from __future__ import annotations

import os
import signal
import statistics
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import httpx

BENCH_DIR = Path(__file__).resolve().parent
ROOT = BENCH_DIR.parent


def cpu_seconds(pid: int) -> float:
    """CPU time (user + system) the process has used so far, in seconds.

    Prefers the nanosecond ``schedstat`` runtime summed over the process's threads; falls back to the
    clock-tick ``utime + stime`` of ``/proc/<pid>/stat``.
    """
    try:
        total = 0
        for task in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{task}/schedstat") as file:
                total += int(file.read().split()[0])
        return total / 1e9
    except (OSError, ValueError, IndexError):
        with open(f"/proc/{pid}/stat") as file:
            fields = file.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def cpu_source() -> str:
    """Which clock ``cpu_seconds`` reads on this machine."""
    return "schedstat (ns)" if os.path.exists(f"/proc/{os.getpid()}/schedstat") else "stat (clock ticks)"


class ServerProcess:
    """One ``bench/serve.py`` server in its own process on 127.0.0.1."""

    def __init__(self, kind: str, argument: str, command: list[str] | None = None) -> None:
        """Start ``serve.py kind argument``, or ``command`` (which prints its port first the same way)."""
        self.kind = kind
        self._process = subprocess.Popen(
            command or [sys.executable, str(BENCH_DIR / "serve.py"), kind, argument],
            cwd=ROOT,
            stdout=subprocess.PIPE,
            text=True,
        )
        assert self._process.stdout is not None
        port = self._process.stdout.readline().strip()
        if not port.isdigit():
            self.stop()
            raise RuntimeError(f"{kind} server did not start")
        self.url = f"http://127.0.0.1:{port}"
        self._wait_ready()

    @property
    def pid(self) -> int:
        return self._process.pid

    def cpu_seconds(self) -> float:
        return cpu_seconds(self.pid)

    def _wait_ready(self) -> None:
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            if self._process.poll() is not None:
                raise RuntimeError(f"{self.kind} server exited with {self._process.returncode}")
            try:
                httpx.get(self.url + "/healthz", timeout=1)
                return
            except httpx.TransportError:
                time.sleep(0.05)
        self.stop()
        raise RuntimeError(f"{self.kind} server not ready within 20 s")

    def stop(self) -> None:
        if self._process.poll() is None:
            self._process.send_signal(signal.SIGTERM)
            try:
                self._process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self._process.kill()
                self._process.wait()
        if self._process.stdout is not None:
            self._process.stdout.close()


@contextmanager
def running(kind: str, argument: str) -> Iterator[ServerProcess]:
    """A server for the duration of the block."""
    server = ServerProcess(kind, argument)
    try:
        yield server
    finally:
        server.stop()


@dataclass
class Target:
    """One thing measured: a server, the request it is sent, and how many units one response holds."""

    label: str
    server: ServerProcess
    path: str
    body: bytes
    units_per_request: int
    floor: Target | None = None
    headers: dict[str, str] = field(default_factory=dict)
    client: httpx.Client = field(init=False)
    per_unit_us: list[float] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.client = httpx.Client(base_url=self.server.url, timeout=30)

    def request(self) -> int:
        """One streamed request, read to its end; returns the body's size in bytes."""
        size = 0
        headers = {"content-type": "application/json", **self.headers}
        with self.client.stream("POST", self.path, content=self.body, headers=headers) as response:
            if response.status_code != 200:
                response.read()
                raise RuntimeError(f"{self.label}: HTTP {response.status_code}: {response.text[:300]}")
            for chunk in response.iter_raw():
                size += len(chunk)
        return size

    def sample(self) -> tuple[bytes, int]:
        """One request's whole response body, and how many reads the client got it in (not measured)."""
        chunks = []
        with self.client.stream(
            "POST", self.path, content=self.body, headers={"content-type": "application/json", **self.headers}
        ) as r:
            chunks = list(r.iter_raw())
        return b"".join(chunks), len(chunks)

    def measure(self, requests: int, max_seconds: float) -> float:
        """CPU µs per unit over up to ``requests`` sequential requests (fewer if time runs out)."""
        deadline = time.monotonic() + max_seconds
        before = self.server.cpu_seconds()
        done = 0
        while done < requests and time.monotonic() < deadline:
            self.request()
            done += 1
        used = self.server.cpu_seconds() - before
        per_unit = used / (done * self.units_per_request) * 1e6
        self.per_unit_us.append(per_unit)
        return per_unit

    def close(self) -> None:
        self.client.close()


def run_rounds(targets: Sequence[Target], *, rounds: int, requests: int, warmup: int, max_seconds: float) -> None:
    """Warm every target up, then measure them in turn, ``rounds`` times, rotating the order."""
    for target in targets:
        for _ in range(warmup):
            target.request()
    for number in range(rounds):
        shift = number % len(targets)
        for target in [*targets[shift:], *targets[:shift]]:
            target.measure(requests, max_seconds)
        figures = "  ".join(f"{t.label} {t.per_unit_us[-1]:.2f}" for t in targets)
        ratios = "  ".join(
            f"{t.label} {t.per_unit_us[-1] / t.floor.per_unit_us[-1]:.2f}x" for t in targets if t.floor is not None
        )
        print(f"round {number + 1}: {figures}\n         ratios: {ratios}", flush=True)


def report(targets: Sequence[Target], *, unit: str, target_ratio: float = 2.0) -> None:
    """The median over all rounds for each target, and each one's ratio to its floor's median."""
    rounds = len(targets[0].per_unit_us)
    print()
    print(f"{'server':<30} {'CPU µs/' + unit:>14} {'vs floor':>9}   (median of {rounds} rounds)")
    for target in targets:
        median = statistics.median(target.per_unit_us)
        if target.floor is None:
            print(f"{target.label:<30} {median:14.2f}")
            continue
        ratio = median / statistics.median(target.floor.per_unit_us)
        verdict = "ok" if ratio <= target_ratio else f"ABOVE the {target_ratio:g}x target"
        print(f"{target.label:<30} {median:14.2f} {ratio:8.2f}x   {verdict}")

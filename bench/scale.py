"""Many concurrent streams in one server process: how long they take to open, whether they all progress,
memory, and the server CPU each stream costs to open as more are open.

    .venv/bin/python bench/scale.py [--streams 2000 5000 10000] [--clients 4] [--mode relay|builtin|proxy]

For each count, a fresh server (chatgate relaying a slow fake OpenAI upstream, chatgate on a slow
``builtin:echo``, or the bare byte proxy as a floor) gets that many streams requested at the same
instant by ``--clients`` load processes (bench/open_streams.py, raw asyncio sockets). Reported:
time from the request to the last first token, p50/p99 of the first event, how many streams
received bytes during the last half of the watch window, connection errors, the server's peak RSS,
and its CPU per opened stream (CPU from the request until the last first token, divided by the
streams). If that last figure grows with the count, opening a stream costs more the more are open.
A benchmark, not a test.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from harness import BENCH_DIR, ServerProcess, cpu_seconds
from stream_cpu import ag_ui_body

# The upstream streams one token every PACE_MS: slow enough that thousands of open streams stay open
# through the watch window without the relaying itself saturating the 2-core machine.
PACE_MS = 10000
TOKENS = 30
ECHO_WORDS = 60


def relay_config(upstream_url: str) -> str:
    return f"""
[providers.fake]
kind = "openai"
base_url = "{upstream_url}/v1"
api_key = "bench"

[agents.bench]
model = "fake:bench"
default = true
"""


BUILTIN_CONFIG = f"""
[agents.bench]
model = "builtin:echo"
default = true
model_settings = {{ delay = {PACE_MS / 1000} }}
"""


def peak_rss_mib(pid: int) -> float:
    """The process's peak resident memory (VmHWM), in MiB."""
    with open(f"/proc/{pid}/status") as file:
        for line in file:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    return 0.0


class CpuSampler(threading.Thread):
    """Samples a process's CPU time every 0.1 s, so the CPU up to any moment can be read afterwards."""

    def __init__(self, pid: int) -> None:
        super().__init__(daemon=True)
        self.pid = pid
        self.samples: list[tuple[float, float]] = []
        self.done = threading.Event()

    def run(self) -> None:
        while not self.done.is_set():
            self.samples.append((time.time(), cpu_seconds(self.pid)))
            self.done.wait(0.1)

    def at(self, moment: float) -> float:
        """CPU seconds used by ``moment`` (the first sample at or after it)."""
        for when, used in self.samples:
            if when >= moment:
                return used
        return self.samples[-1][1]


def measure(mode: str, count: int, clients: int, watch: float, tmp: Path) -> dict[str, Any]:
    """Open ``count`` streams against a fresh server; the figures for this count."""
    upstream: ServerProcess | None = None
    if mode in ("relay", "proxy"):
        upstream = ServerProcess("upstream", f"{TOKENS},{PACE_MS}")
    try:
        if mode == "relay":
            assert upstream is not None
            (tmp / "chatgate.toml").write_text(relay_config(upstream.url))
            server = ServerProcess("chatgate", str(tmp / "chatgate.toml"))
            path = "/ag-ui"
        elif mode == "builtin":
            (tmp / "chatgate.toml").write_text(BUILTIN_CONFIG)
            server = ServerProcess("chatgate", str(tmp / "chatgate.toml"))
            path = "/ag-ui"
        else:
            assert upstream is not None
            server = ServerProcess("proxy", upstream.url + "/v1/chat/completions")
            path = "/v1/chat/completions"
        try:
            marker = "TEXT_MESSAGE_CONTENT" if mode != "proxy" else "word000"
            return drive(server, path, marker, count, clients, watch, tmp)
        finally:
            server.stop()
    finally:
        if upstream is not None:
            upstream.stop()


def drive(
    server: ServerProcess, path: str, marker: str, count: int, clients: int, watch: float, tmp: Path
) -> dict[str, Any]:
    body_file = tmp / "body.json"
    body_file.write_bytes(ag_ui_body(" ".join(f"w{n}" for n in range(ECHO_WORDS))))
    port = server.url.rsplit(":", 1)[1]
    start_at = time.time() + 2.0
    shares = [count // clients + (1 if n < count % clients else 0) for n in range(clients)]
    sampler = CpuSampler(server.pid)
    sampler.start()
    command = [sys.executable, str(BENCH_DIR / "open_streams.py"), "127.0.0.1", port, path, str(body_file), marker]
    processes = [
        subprocess.Popen(
            [*command, str(share), str(start_at), str(watch)],
            stdout=subprocess.PIPE,
            text=True,
        )
        for share in shares
    ]
    results = []
    for process in processes:
        out, _ = process.communicate(timeout=watch + 120)
        results.append(json.loads(out))
    sampler.done.set()
    sampler.join()
    delays = sorted(d for r in results for d in r["first_event_delays"])
    errors: dict[str, int] = {}
    for r in results:
        for name, n in r["errors"].items():
            errors[name] = errors.get(name, 0) + n
    opened_in = delays[-1] if delays else float("nan")
    open_cpu = sampler.at(start_at + opened_in) - sampler.at(start_at)
    return {
        "streams": count,
        "opened": len(delays),
        "opened_in_s": round(opened_in, 2),
        "first_event_p50_s": round(statistics.median(delays), 3) if delays else None,
        "first_event_p99_s": round(delays[int(len(delays) * 0.99) - 1], 3) if delays else None,
        "progressed": sum(r["progressed"] for r in results),
        "errors": errors,
        "peak_rss_mib": round(peak_rss_mib(server.pid), 1),
        "open_cpu_s": round(open_cpu, 2),
        "open_cpu_ms_per_stream": round(open_cpu / max(1, len(delays)) * 1000, 3),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--streams", type=int, nargs="+", default=[2000, 5000, 10000])
    parser.add_argument("--clients", type=int, default=4, help="load client processes")
    parser.add_argument("--mode", choices=["relay", "builtin", "proxy"], default="relay")
    parser.add_argument("--watch", type=float, default=24.0, help="seconds the streams are held open")
    parser.add_argument("--json", type=Path, help="also write the figures to this file")
    parser.add_argument(
        "--pool",
        choices=["chatgate", "single"],
        default="chatgate",
        help="the upstream client: chatgate's own transport, or the earliest one (one httpx pool)",
    )
    parser.add_argument(
        "--gc", choices=["serving", "default"], default="serving", help="default: without chatgate serve's settings"
    )
    args = parser.parse_args()
    os.environ["BENCH_POOL"] = args.pool
    os.environ["BENCH_GC"] = args.gc
    print(f"{args.mode} ({args.pool} pool, {args.gc} gc): paced {PACE_MS} ms/token; {args.clients} client processes")
    header = f"{'streams':>8} {'opened':>7} {'in s':>6} {'p50 s':>6} {'p99 s':>6} {'progressed':>10}"
    print(f"{header} {'errors':>8} {'peak RSS MiB':>12} {'open CPU s':>10} {'ms/stream':>9}")
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for count in args.streams:
            row = measure(args.mode, count, args.clients, args.watch, Path(tmp))
            rows.append(row)
            errors = sum(row["errors"].values())
            print(
                f"{row['streams']:>8} {row['opened']:>7} {row['opened_in_s']:>6} {row['first_event_p50_s']!s:>6} "
                f"{row['first_event_p99_s']!s:>6} {row['progressed']:>10} {errors:>8} "
                f"{row['peak_rss_mib']:>12} {row['open_cpu_s']:>10} {row['open_cpu_ms_per_stream']:>9}",
                flush=True,
            )
            if row["errors"]:
                print(f"         errors: {row['errors']}")
    if args.json:
        args.json.write_text(
            json.dumps({"mode": args.mode, "pool": args.pool, "pace_ms": PACE_MS, "rows": rows}, indent=2)
        )


if __name__ == "__main__":
    main()

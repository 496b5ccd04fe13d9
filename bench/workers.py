"""Requests per second through ``chatgate serve --workers N`` on the built-in model.

    .venv/bin/python bench/workers.py [--workers 1 2 4] [--requests 400] [--concurrency 20]

For each N the installed ``chatgate serve --workers N`` (uvloop + httptools, access log off) serves a
200-token ``builtin:echo`` reply on the AG-UI route to ``--clients`` load processes (bench/load.py);
reported: wall-clock requests per second, the CPU of the whole process tree (parent and workers), and
time to first token. On a machine with fewer free cores than workers, the extra workers only share them.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx
from harness import BENCH_DIR, cpu_seconds
from stream_cpu import CONFIG, ag_ui_body, user_text


def tree_cpu(parent: int) -> float:
    """CPU seconds of ``parent`` and its live children."""
    children = Path(f"/proc/{parent}/task/{parent}/children").read_text().split()
    return cpu_seconds(parent) + sum(cpu_seconds(int(pid)) for pid in children)


def measure(workers: int, args: argparse.Namespace, tmp: Path) -> dict[str, float]:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    config = tmp / "chatgate.toml"
    config.write_text(CONFIG)
    body = tmp / "body.json"
    body.write_bytes(ag_ui_body(user_text()))
    chatgate = str(Path(sys.executable).with_name("chatgate"))
    options = ["--port", str(port), "--config", str(config), "--workers", str(workers), "--log-level", "warning"]
    server = subprocess.Popen(
        [chatgate, "serve", *options],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            try:
                httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=1)
                break
            except httpx.TransportError:
                time.sleep(0.1)
        time.sleep(1)  # let every worker finish starting
        load = [sys.executable, str(BENCH_DIR / "load.py"), str(port), "/ag-ui", str(body), "TEXT_MESSAGE_CONTENT"]
        share = [str(args.concurrency // args.clients), str(args.requests // args.clients)]
        before, started = tree_cpu(server.pid), time.perf_counter()
        clients = [subprocess.Popen([*load, *share], stdout=subprocess.PIPE, text=True) for _ in range(args.clients)]
        results = [json.loads(client.communicate(timeout=600)[0]) for client in clients]
        elapsed, used = time.perf_counter() - started, tree_cpu(server.pid) - before
    finally:
        server.terminate()
        server.wait(timeout=30)
    done = sum(r["done"] for r in results)
    firsts = sorted(t for r in results for t in r["first_token_s"])
    return {
        "workers": workers,
        "requests_per_s": round(done / elapsed, 1),
        "server_cpu_s": round(used, 2),
        "first_token_p50_ms": round(statistics.median(firsts) * 1000, 1),
        "failures": sum(len(r["failures"]) for r in results),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 2, 4])
    parser.add_argument("--requests", type=int, default=400)
    parser.add_argument("--concurrency", type=int, default=20)
    parser.add_argument("--clients", type=int, default=2)
    args = parser.parse_args()
    print(f"nproc {os.cpu_count()}, load average {os.getloadavg()}")
    print(f"{'workers':>7} {'req/s':>7} {'server CPU s':>12} {'TTFT p50 ms':>11} {'failures':>8}")
    with tempfile.TemporaryDirectory() as tmp:
        for workers in args.workers:
            row = measure(workers, args, Path(tmp))
            print(
                f"{row['workers']:>7} {row['requests_per_s']:>7} {row['server_cpu_s']:>12} "
                f"{row['first_token_p50_ms']:>11} {row['failures']:>8}",
                flush=True,
            )


if __name__ == "__main__":
    main()

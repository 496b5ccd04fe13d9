"""``GET /metrics`` with ``--workers 2``: the counts of both workers, whichever answers the scrape.

Each client keeps one connection, and the test finds which worker holds it (``/proc``), so it knows how
many requests each worker served before it scrapes.
"""

from __future__ import annotations

import importlib.metadata
import signal
import tempfile
import time
from pathlib import Path

import httpx
from prometheus_client.parser import text_string_to_metric_families

from tests.conftest import STARTUP_SECONDS, ChatgateProcess
from tests.serve.test_drain import stream_ports
from tests.serve.test_workers import running_workers

USE_CHAT = {"id": "c", "messages": [{"id": "u", "role": "user", "parts": [{"type": "text", "text": "hi"}]}]}
PER_CLIENT = 5


def samples(text: str, name: str) -> list[tuple[dict[str, str], float]]:
    return [
        (sample.labels, sample.value)
        for family in text_string_to_metric_families(text)
        for sample in family.samples
        if sample.name == name
    ]


def test_a_scrape_sums_the_counts_of_every_worker(tmp_path: Path, chatgate_process: ChatgateProcess) -> None:
    # Directories left by processes killed before (another run's): one may hold files under a reused pid.
    earlier = set(Path(tempfile.gettempdir()).glob("chatgate-metrics-*"))
    url, process = chatgate_process("--workers", "2")
    port = int(url.rsplit(":", 1)[1])
    workers = sorted(running_workers(process.pid))
    deadline = time.monotonic() + STARTUP_SECONDS

    clients: dict[int, list[httpx.Client]] = {pid: [] for pid in workers}
    while min(len(held) for held in clients.values()) < 2 and time.monotonic() < deadline:
        client = httpx.Client(base_url=url, timeout=10)  # one keep-alive connection: always the same worker
        assert client.post("/api/chat", json=USE_CHAT).status_code == 200
        local = next(iter(client._transport._pool.connections))._connection._network_stream  # type: ignore[attr-defined]
        client_port = local.get_extra_info("socket").getsockname()[1]
        owner = [pid for pid in workers if client_port in stream_ports(pid, port)]
        assert len(owner) == 1
        clients[owner[0]].append(client)
    served = {pid: 0 for pid in workers}
    for pid, held in clients.items():
        for client in held:
            for _ in range(PER_CLIENT - 1):  # the first request is already made
                assert client.post("/api/chat", json=USE_CHAT).status_code == 200
            served[pid] += PER_CLIENT
    total = sum(served.values())
    assert all(count >= 2 * PER_CLIENT for count in served.values()), served
    print(f"\nrequests served per worker: {sorted(served.values())}")

    scrapes = [httpx.get(f"{url}/metrics").text for _ in range(6)]  # new connections: either worker answers
    for text in scrapes:
        chats = samples(text, "chatgate_requests_total")
        assert sum(value for labels, value in chats if labels["protocol"] == "vercel-ai") == total
        assert samples(text, "chatgate_active_streams") == [({"protocol": "vercel-ai", "agent": "assistant"}, 0.0)]
        version = importlib.metadata.version("chatgate")
        assert samples(text, "chatgate_build_info") == [({"version": version}, 1.0)]
        memory = {labels["pid"] for labels, _ in samples(text, "process_resident_memory_bytes")}
        assert memory == {str(pid) for pid in [process.pid, *workers]}
    for held in clients.values():
        for client in held:
            client.close()

    process.send_signal(signal.SIGTERM)
    assert process.wait(timeout=20) == 0
    found = [path for pid in workers for path in Path(tempfile.gettempdir()).glob(f"chatgate-metrics-*/*_{pid}.db")]
    written = [path for path in found if path.parent not in earlier]
    assert written == []  # the parent removed the workers' value files with their directory

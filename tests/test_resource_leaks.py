"""Hundreds of aborted streams and refused requests leave nothing behind.

A live server (uvicorn in a thread of this process) streams from a fake OpenAI upstream that answers
slowly. Clients hang up mid-stream, hang up before any answer, or send requests that are refused; then
the process's open file descriptors, the tasks on the server's event loop and the connections the
upstream sees open must be back at their baseline.
"""

import asyncio
import json
import os
import socket
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import httpx
import pytest

from chatgate.web.app import create_app
from tests.conftest import LiveServer, make_config
from tests.providers.fakes import FakeUpstream, Reply, fake_in_thread, openai_chunk
from tests.providers.support import provider_table

ROUNDS = 100  # each round: one stream aborted mid-answer, one aborted before it, two refused requests
# A 30-second answer: whatever an abort fails to close is still open when the counts are compared.
SLOW = Reply(
    [piece for n in range(600) for piece in (openai_chunk({"content": f"w{n} "}), 0.05)]
    + [
        openai_chunk({}, "stop"),
        b"data: [DONE]\n\n",
    ]
)
BODY = {
    "threadId": "t1",
    "runId": "r1",
    "messages": [{"id": "u1", "role": "user", "content": "Hello"}],
    "tools": [],
    "context": [],
    "state": {},
    "forwardedProps": {},
}


class Measured:
    """The live server, its event loop and its upstream, and what each counts right now."""

    def __init__(self, url: str, loop: asyncio.AbstractEventLoop, upstream: FakeUpstream) -> None:
        self.url = url
        self.loop = loop
        self.upstream = upstream

    def tasks(self) -> int:
        async def count() -> int:
            return len(asyncio.all_tasks()) - 1  # not this one

        return asyncio.run_coroutine_threadsafe(count(), self.loop).result(5)

    def counts(self) -> dict[str, int]:
        return {
            "fds": len(os.listdir("/proc/self/fd")),
            "tasks": self.tasks(),
            "upstream connections": self.upstream.open_connections,
        }


@pytest.fixture
def measured() -> Iterator[Measured]:
    loops: list[asyncio.AbstractEventLoop] = []
    with fake_in_thread(SLOW) as upstream:
        config = make_config(
            {"bot": {"model": "up:m", "default": True}},
            providers={"up": provider_table("openai", upstream.url)},
            server={"max_body_bytes": 4096},
        )
        inner = create_app(config)

        async def app(scope: Any, receive: Any, send: Any) -> None:
            if scope["type"] == "lifespan":
                loops.append(asyncio.get_running_loop())
            await inner(scope, receive, send)

        server = LiveServer(app)
        server.start()
        try:
            yield Measured(server.url, loops[0], upstream)
        finally:
            server.stop()


def abort_mid_stream(client: httpx.Client, url: str) -> None:
    """Read until the first text arrives, then hang up (an unfinished response closes its connection)."""
    with client.stream("POST", f"{url}/ag-ui", json=BODY) as response:
        assert response.status_code == 200
        for line in response.iter_lines():
            if '"TEXT_MESSAGE_CONTENT"' in line:
                return
    pytest.fail("the stream ended before any text")


def abort_before_the_answer(url: str) -> None:
    """Send the request on a raw socket and close it at once."""
    host, port = url.removeprefix("http://").split(":")
    body = json.dumps(BODY).encode()
    head = f"POST /ag-ui HTTP/1.1\r\nhost: {host}\r\ncontent-type: application/json\r\n"
    with socket.create_connection((host, int(port)), timeout=5) as sock:
        sock.sendall(f"{head}content-length: {len(body)}\r\n\r\n".encode() + body)


def refused(client: httpx.Client, url: str, n: int) -> None:
    """One of the requests chatgate refuses before calling the model, each a JSON 4xx."""
    headers = {"content-type": "application/json"}
    attempts: list[Callable[[], httpx.Response]] = [
        lambda: client.post(f"{url}/ag-ui", content=b"{not json", headers=headers),
        lambda: client.post(f"{url}/ag-ui", content=b"x" * 5000, headers=headers),
        lambda: client.post(f"{url}/ag-ui", content=json.dumps(BODY), headers={"content-type": "text/plain"}),
        lambda: client.post(f"{url}/agents/nobody/ag-ui", json=BODY),
        lambda: client.post(f"{url}/ag-ui", json={**BODY, "messages": "no"}),
    ]
    response = attempts[n % len(attempts)]()
    assert 400 <= response.status_code < 500
    assert "error" in response.json()


def settled(measured: Measured, baseline: dict[str, int], slack: dict[str, int], seconds: float) -> dict[str, int]:
    """The counts once each is within its slack of the baseline, or the last counts after ``seconds``."""
    deadline = time.monotonic() + seconds
    while True:
        counts = measured.counts()
        if all(counts[key] <= baseline[key] + slack[key] for key in counts) or time.monotonic() > deadline:
            return counts
        time.sleep(0.1)


def test_aborted_and_refused_requests_leave_no_descriptors_tasks_or_upstream_connections(measured: Measured) -> None:
    url = measured.url
    with httpx.Client(timeout=10) as client:  # warm up: the upstream pool, the thread pool, lazily opened files
        abort_mid_stream(client, url)
        abort_before_the_answer(url)
        refused(client, url, 0)
    time.sleep(1.0)  # let the warm-up's streams finish ending
    baseline = measured.counts()

    peak = dict(baseline)
    started = time.monotonic()
    # One client for all threads (a client per request would spend the time loading CA certificates);
    # closed before measuring, so its own pooled connections are not counted.
    limits = httpx.Limits(max_connections=32)
    with httpx.Client(timeout=10, limits=limits) as client, ThreadPoolExecutor(max_workers=16) as pool:
        jobs = []
        for n in range(ROUNDS):
            jobs.append(pool.submit(abort_mid_stream, client, url))
            jobs.append(pool.submit(abort_before_the_answer, url))
            jobs += [pool.submit(refused, client, url, 2 * n), pool.submit(refused, client, url, 2 * n + 1)]
        while not all(job.done() for job in jobs):
            peak = {key: max(value, peak[key]) for key, value in measured.counts().items()}
            time.sleep(0.05)
        for job in jobs:
            job.result()
    took = time.monotonic() - started

    # Slack, and why: an idle keep-alive connection that httpx's upstream pool may hold at one moment
    # and not another is one descriptor at each end (the fake runs in this process); no task and no
    # more than that one upstream connection may remain.
    slack = {"fds": 2, "tasks": 0, "upstream connections": 1}
    after = settled(measured, baseline, slack, 10)
    print(f"baseline {baseline}, peak {peak}, after {after}: {4 * ROUNDS} requests in {took:.1f}s")
    assert measured.upstream.connections > ROUNDS  # the aborted streams really reached the upstream
    assert peak["tasks"] > baseline["tasks"] and peak["fds"] > baseline["fds"]  # the measures see the load
    for key, value in after.items():
        assert value <= baseline[key] + slack[key], f"{key}: {baseline[key]} before, {value} after"

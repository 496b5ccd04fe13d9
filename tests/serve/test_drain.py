"""SIGTERM drains ``chatgate serve --workers 2``: running streams finish, new ones go elsewhere.

One real server (two workers, an OpenAI-compatible fake upstream) holds at least 20 short streams on
each worker, and one stored stream (SQLite) that never ends on its own, when it gets SIGTERM. No stream
depends on how fast this machine is: the upstream holds every short answer after its first word until
the test releases it, after SIGTERM and the checks of the drain, so each is still running when the
signal comes however long opening them took (a loaded machine took tens of seconds); and the long
answer goes on until the grace period ends it. Every short stream ends with its whole answer;
``/readyz`` answers 503 before they end; a new chat request meanwhile gets 503 with ``Retry-After``;
the long stream ends in protocol at the grace period, its turn stored as partial; and the parent exits
once the workers have.
"""

from __future__ import annotations

import json
import signal
import sqlite3
import subprocess
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import httpx

from chatgate.drain import ENDING_SECONDS
from chatgate.run.runner import SHUTTING_DOWN
from tests.conftest import ChatgateProcess
from tests.providers.fakes import FakeUpstream, Recorded, Reply, fake_in_thread, openai_chunk
from tests.serve.test_workers import running_workers

GRACE = 30  # the checks between SIGTERM and the release took up to 7 s beside two CPU hogs
PER_WORKER = 20
MOST_STREAMS = 200  # the kernel hands each connection to either worker: open until each holds 20 (70 under load)
WAIT = 60  # seconds: only how long a failing test waits before it says so; nothing here is timed against it
LONG_WORDS = 36_000  # one every 0.1 s: an hour, so the grace period is what ends it
LAST_WORD = "end"
CONFIG = """
[server]
shutdown_grace_seconds = {grace}
[store]
url = "sqlite:///threads.db"
[providers.up]
kind = "openai"
base_url = "{upstream}"
api_key = "sk-test"
retries = 0
timeouts = {{ idle = 3600 }}  # a held answer is silent for as long as opening the others takes
[agents.slow]
model = "up:m"
default = true
[agents.stored]
model = "up:m"
conversations = "server"
"""


class HoldingUpstream(FakeUpstream):
    """Answers the long thread forever, word by word; every other one with ``w0``, then, once released,
    ``end`` and the stop."""

    def __init__(self) -> None:
        super().__init__()
        self.released = threading.Event()

    async def reply_to(self, request: Recorded) -> Reply:
        if "long" in json.dumps(request.body):
            words = (piece for n in range(LONG_WORDS) for piece in (openai_chunk({"content": f"w{n} "}), 0.1))
            return Reply(list(words))
        held = openai_chunk({"content": LAST_WORD}), openai_chunk({}, "stop"), b"data: [DONE]\n\n"
        return Reply([openai_chunk({"content": "w0 "}), self.released, *held])


def chat(thread: str) -> dict[str, object]:
    return {
        "id": thread,
        "messages": [{"id": f"u-{thread}", "role": "user", "parts": [{"type": "text", "text": thread}]}],
    }


@dataclass
class Stream:
    """One useChat stream read on its own thread: its frames, and when its first and last came."""

    thread: str
    path: str = "/api/chat"
    frames: list[object] = field(default_factory=list)
    first: threading.Event = field(default_factory=threading.Event)
    ended_at: float | None = None
    local_port: int | None = None

    def read(self, url: str) -> None:
        with httpx.stream("POST", url + self.path, json=chat(self.thread), timeout=WAIT) as response:
            stream = response.extensions["network_stream"]
            self.local_port = stream.get_extra_info("socket").getsockname()[1]
            buffer = ""
            for text in response.iter_text():
                buffer += text
                *complete, buffer = buffer.split("\n\n")
                for frame in complete:
                    if frame.startswith("data: "):
                        data = frame.removeprefix("data: ")
                        self.frames.append(data if data == "[DONE]" else json.loads(data))
                        self.first.set()
        self.ended_at = time.monotonic()
        self.first.set()

    def text(self) -> str:
        return "".join(str(f["delta"]) for f in self.frames if isinstance(f, dict) and f["type"] == "text-delta")


def stream_ports(pid: int, port: int) -> set[int]:
    """The client ports of the connections to ``port`` that process ``pid`` holds open."""
    inodes = set()
    for fd in Path(f"/proc/{pid}/fd").iterdir():
        try:
            target = fd.readlink().as_posix()
        except OSError:
            continue
        if target.startswith("socket:["):
            inodes.add(target[8:-1])
    ports = set()
    for line in Path("/proc/net/tcp").read_text().splitlines()[1:]:
        fields = line.split()
        local, remote, state, inode = fields[1], fields[2], fields[3], fields[9]
        if state == "01" and inode in inodes and int(local.split(":")[1], 16) == port:
            ports.add(int(remote.split(":")[1], 16))
    return ports


def test_sigterm_lets_running_streams_finish_and_sends_new_ones_away(
    tmp_path: Path, chatgate_process: ChatgateProcess
) -> None:
    with fake_in_thread(fake=HoldingUpstream()) as upstream:
        assert isinstance(upstream, HoldingUpstream)
        drain_with_held_streams(tmp_path, chatgate_process, upstream)


def two_workers(
    tmp_path: Path, chatgate_process: ChatgateProcess, upstream: HoldingUpstream, grace: float
) -> tuple[str, subprocess.Popen[bytes], set[int]]:
    """``chatgate serve --workers 2`` on ``upstream`` with ``grace``, once both workers run: URL, parent, workers."""
    path = tmp_path / "c.toml"
    path.write_text(CONFIG.format(grace=grace, upstream=upstream.url))
    url, process = chatgate_process("--config", str(path), "--workers", "2")
    return url, process, running_workers(process.pid)


def drain_with_held_streams(tmp_path: Path, chatgate_process: ChatgateProcess, upstream: HoldingUpstream) -> None:
    url, process, workers = two_workers(tmp_path, chatgate_process, upstream, GRACE)
    port = int(url.rsplit(":", 1)[1])

    long = Stream("long", "/agents/stored/chat")  # never ends on its own; stored
    short: list[Stream] = []
    readers = []
    per_worker = dict.fromkeys(workers, 0)
    opening = time.monotonic()
    while True:  # one at a time, each counted on the worker that holds its connection
        stream = long if not readers else Stream(f"short-{len(short)}")
        reader = threading.Thread(target=stream.read, args=(url,), daemon=True)
        reader.start()
        readers.append(reader)
        assert stream.first.wait(WAIT)
        if stream is long:
            continue
        short.append(stream)
        per_worker[next(pid for pid in workers if stream.local_port in stream_ports(pid, port))] += 1
        if min(per_worker.values()) >= PER_WORKER:
            break
        assert len(short) < MOST_STREAMS, per_worker

    assert all(stream.ended_at is None for stream in short)  # every one is in flight when the signal comes
    signalled = time.monotonic()
    process.send_signal(signal.SIGTERM)
    ready = httpx.get(f"{url}/readyz", timeout=WAIT)
    while ready.status_code == 200 and time.monotonic() < signalled + WAIT:  # the parent passes the signal on
        ready = httpx.get(f"{url}/readyz", timeout=WAIT)
    not_ready_after = time.monotonic() - signalled
    assert all(stream.ended_at is None for stream in short)  # 503 came while every stream still ran
    assert ready.status_code == 503 and ready.json()["status"] == "draining"
    refusals = [httpx.post(f"{url}/agents/stored/chat", json=chat(f"new-{n}"), timeout=WAIT) for n in range(6)]
    for refused in refusals:  # a new run goes to another replica (each connection may reach either worker)
        # (stored: the store's rows below show that none of them started a run)
        assert refused.status_code == 503, refused.text
        assert refused.headers["retry-after"] == "1"
        assert refused.json()["error"]["code"] == "shutting_down"
    readiness = [httpx.get(f"{url}/readyz", timeout=WAIT).status_code for _ in range(6)]
    assert readiness == [503] * 6  # both workers drain
    released = time.monotonic()
    upstream.released.set()  # now, not before: a worker with nothing left to run shuts down at once

    for reader in readers:
        reader.join(timeout=GRACE + ENDING_SECONDS + WAIT)
    assert process.wait(timeout=WAIT) == 0

    for stream in short:  # every short stream ended with its whole answer, before the grace period was over
        finish = stream.frames[-2]
        assert isinstance(finish, dict) and finish["finishReason"] == "stop" and stream.frames[-1] == "[DONE]"
        assert stream.text() == f"w0 {LAST_WORD}", stream.text()
    assert long.frames[-1] == "[DONE]"
    assert {"type": "error", "errorText": SHUTTING_DOWN} in long.frames
    assert long.frames[-2] == {"type": "finish", "finishReason": "error"}, long.frames[-4:]
    assert 0 < len(long.text().split()) < LONG_WORDS
    assert long.ended_at is not None and long.ended_at - signalled >= GRACE  # it ran the whole grace period

    with sqlite3.connect(tmp_path / "threads.db") as db:
        rows = db.execute(
            "SELECT t.id, m.status FROM messages m JOIN threads t ON t.key = m.thread_key WHERE m.role = 'assistant'"
        ).fetchall()
    assert rows == [("long", "partial")]
    last_short = max(stream.ended_at or 0 for stream in short)
    print(
        f"\ndrain figures: {len(short)} short streams over workers {list(per_worker.values())}: "
        f"{len(short)} complete, 1 long partial; opening the streams took {signalled - opening:.2f} s; "
        f"/readyz 503 {not_ready_after * 1000:.0f} ms after SIGTERM; released {released - signalled:.2f} s after it; "
        f"the last short stream ended "
        f"{last_short - signalled:.2f} s and the long one {long.ended_at - signalled:.2f} s after it (grace {GRACE} s)"
    )

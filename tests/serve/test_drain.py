"""SIGTERM drains ``chatgate serve --workers 2``: running streams finish, new ones go elsewhere.

One real server (two workers, ``builtin:echo`` slowed to ~6.6 s an answer) holds at least 20 short
streams on each worker, and one stored stream (SQLite) longer than the grace period, when it gets
SIGTERM. Every short stream ends with its whole answer; ``/readyz`` answers 503 before they end; a new chat request
meanwhile gets 503 with ``Retry-After``; the long stream ends in protocol at the grace period, its turn
stored as partial; and the parent exits once the workers have.
"""

from __future__ import annotations

import json
import signal
import sqlite3
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import httpx

from chatgate.run.runner import SHUTTING_DOWN
from tests.conftest import ChatgateProcess
from tests.serve.test_workers import worker_pids

GRACE = 10
WORDS = 60  # ~6.6 s an answer: every short stream is still running when the signal comes
PER_WORKER = 20
MOST_STREAMS = 80  # the kernel hands each connection to either worker: open streams until each holds 20
CONFIG = f"""
[server]
shutdown_grace_seconds = {GRACE}
[store]
url = "sqlite:///threads.db"
[agents.slow]
model = "builtin:echo"
default = true
model_settings = {{ delay = 0.1 }}
[agents.stored]
model = "builtin:echo"
conversations = "server"
model_settings = {{ delay = 0.1 }}
"""


def chat(thread: str, words: int) -> dict[str, object]:
    text = " ".join(f"w{index}" for index in range(words))
    return {
        "id": thread,
        "messages": [{"id": f"u-{thread}", "role": "user", "parts": [{"type": "text", "text": text}]}],
    }


@dataclass
class Stream:
    """One useChat stream read on its own thread: its frames, and when its first and last came."""

    thread: str
    words: int
    path: str = "/api/chat"
    frames: list[object] = field(default_factory=list)
    first: threading.Event = field(default_factory=threading.Event)
    ended_at: float | None = None
    local_port: int | None = None

    def read(self, url: str) -> None:
        with httpx.stream("POST", url + self.path, json=chat(self.thread, self.words), timeout=60) as response:
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
    path = tmp_path / "c.toml"
    path.write_text(CONFIG)
    url, process = chatgate_process("--config", str(path), "--workers", "2")
    port = int(url.rsplit(":", 1)[1])
    deadline = time.monotonic() + 20
    while len(worker_pids(process.pid)) < 2 and time.monotonic() < deadline:
        time.sleep(0.1)
    workers = worker_pids(process.pid)
    assert len(workers) == 2

    long = Stream("long", 300, "/agents/stored/chat")  # ~30 s, longer than the grace period; stored
    short: list[Stream] = []
    readers = []
    per_worker = dict.fromkeys(workers, 0)
    opening = time.monotonic()
    while True:  # one at a time, each counted on the worker that holds its connection
        stream = long if not readers else Stream(f"short-{len(short)}", WORDS)
        reader = threading.Thread(target=stream.read, args=(url,), daemon=True)
        reader.start()
        readers.append(reader)
        assert stream.first.wait(20)
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
    ready = httpx.get(f"{url}/readyz")
    while ready.status_code == 200:  # the parent passes the signal on: a moment, then 503
        ready = httpx.get(f"{url}/readyz")
    not_ready_after = time.monotonic() - signalled
    assert all(stream.ended_at is None for stream in short)  # 503 came while every stream still ran
    assert ready.status_code == 503 and ready.json()["status"] == "draining"
    refusals = [httpx.post(f"{url}/agents/stored/chat", json=chat(f"new-{n}", 3), timeout=10) for n in range(6)]
    for refused in refusals:  # a new run goes to another replica (each connection may reach either worker)
        # (stored: the store's rows below show that none of them started a run)
        assert refused.status_code == 503, refused.text
        assert refused.headers["retry-after"] == "1"
        assert refused.json()["error"]["code"] == "shutting_down"
    readiness = [httpx.get(f"{url}/readyz").status_code for _ in range(6)]
    assert readiness == [503] * 6  # both workers drain

    for reader in readers:
        reader.join(timeout=GRACE + 20)
    assert process.wait(timeout=20) == 0

    for stream in short:  # every short stream ended with its whole answer
        finish = stream.frames[-2]
        assert isinstance(finish, dict) and finish["finishReason"] == "stop" and stream.frames[-1] == "[DONE]"
        assert stream.text().rstrip().endswith(f"w{WORDS - 1}"), stream.text()
    assert long.frames[-1] == "[DONE]"
    assert {"type": "error", "errorText": SHUTTING_DOWN} in long.frames
    assert long.frames[-2] == {"type": "finish", "finishReason": "error"}, long.frames[-4:]
    assert 0 < len(long.text().split()) < 300
    assert long.ended_at is not None and long.ended_at - signalled >= GRACE  # it ran the whole grace period

    with sqlite3.connect(tmp_path / "threads.db") as db:
        rows = db.execute(
            "SELECT t.id, m.status FROM messages m JOIN threads t ON t.key = m.thread_key WHERE m.role = 'assistant'"
        ).fetchall()
    assert rows == [("long", "partial")]
    print(
        f"\ndrain figures: {len(short)} short streams over workers {list(per_worker.values())}: "
        f"{len(short)} complete, 1 long partial; /readyz 503 {not_ready_after * 1000:.0f} ms after SIGTERM; "
        f"long stream ended {long.ended_at - signalled:.2f} s after SIGTERM (grace {GRACE} s); "
        f"opening the streams took {signalled - opening:.2f} s"
    )

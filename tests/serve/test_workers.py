"""``chatgate serve --workers 2``: two processes serve one port, and SIGTERM still ends streams in-protocol."""

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx

from chatgate.run.runner import SHUTTING_DOWN
from tests.conftest import STARTUP_SECONDS, ChatgateProcess
from tests.processes import children, running
from tests.web.test_shutdown import AG_UI, CONFIG, frames_after_sigterm


def worker_pids(parent: int) -> set[int]:
    return set(children(parent))


def running_workers(parent: int, count: int = 2) -> set[int]:
    """The PIDs of ``parent``'s workers once ``count`` run (the test fails after ``STARTUP_SECONDS``)."""
    deadline = time.monotonic() + STARTUP_SECONDS
    while len(worker_pids(parent)) < count and time.monotonic() < deadline:
        time.sleep(0.1)
    workers = worker_pids(parent)
    assert len(workers) == count, workers
    return workers


def test_two_workers_serve_and_stop_cleanly(tmp_path: Path, chatgate_process: ChatgateProcess) -> None:
    path = tmp_path / "c.toml"
    path.write_text(CONFIG)
    url, process = chatgate_process("--config", str(path), "--workers", "2")
    workers = running_workers(process.pid)
    assert httpx.get(f"{url}/healthz").json() == {"status": "ok"}

    frames = [json.loads(frame) for frame in frames_after_sigterm(url, process, "/ag-ui", AG_UI)]
    assert frames[-1] == {"type": "RUN_ERROR", "message": SHUTTING_DOWN, "code": "server_shutdown"}
    assert len(frames) < 50
    for pid in workers:  # every worker has exited, none is left behind
        assert not running(pid)


def test_a_worker_that_dies_is_replaced(tmp_path: Path, chatgate_process: ChatgateProcess) -> None:
    url, process = chatgate_process("--workers", "2")
    first = running_workers(process.pid)
    os.kill(next(iter(first)), signal.SIGKILL)
    deadline = time.monotonic() + STARTUP_SECONDS
    while (len(worker_pids(process.pid)) < 2 or worker_pids(process.pid) == first) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert len(worker_pids(process.pid)) == 2 and worker_pids(process.pid) != first
    assert httpx.get(f"{url}/healthz").json() == {"status": "ok"}
    process.send_signal(signal.SIGTERM)
    assert process.wait(timeout=20) == 0


def test_workers_must_be_at_least_one() -> None:
    command = str(Path(sys.executable).with_name("chatgate"))
    result = subprocess.run([command, "serve", "--workers", "0"], capture_output=True, text=True, check=False)
    assert result.returncode == 2
    assert "--workers" in result.stderr


def test_sighup_reaches_every_worker_and_the_server_keeps_serving(
    tmp_path: Path, chatgate_process: ChatgateProcess
) -> None:
    path = tmp_path / "c.toml"
    path.write_text('[agents.one]\nmodel = "builtin:echo"\ndefault = true\n')
    url, process = chatgate_process("--config", str(path), "--workers", "2")
    path.write_text('[agents.two]\nmodel = "builtin:echo"\ndefault = true\n')
    deadline = time.monotonic() + 20
    answers: set[int] = set()
    while time.monotonic() < deadline:  # every worker now knows agent "two" (requests spread over both)
        process.send_signal(signal.SIGHUP)  # again each time: a worker still starting ignores it
        answers = {httpx.post(f"{url}/agents/two/ag-ui", json=AG_UI, timeout=10).status_code for _ in range(10)}
        if answers == {200}:
            break
        time.sleep(0.2)
    assert answers == {200}
    assert process.poll() is None
    process.send_signal(signal.SIGTERM)
    assert process.wait(timeout=20) == 0

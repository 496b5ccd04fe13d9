"""Workers die with their supervisor: SIGKILL the ``chatgate serve --workers 2`` parent, and each worker
drains (a running stream ends with its whole answer) and exits, leaving the port free."""

from __future__ import annotations

import errno
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import httpx

from chatgate.drain import ENDING_SECONDS
from tests.conftest import ChatgateProcess
from tests.processes import reap, wait_gone
from tests.providers.fakes import fake_in_thread
from tests.serve.test_drain import LAST_WORD, WAIT, HoldingUpstream, Stream, two_workers

ORPHAN = """
import os, sys, time
from chatgate.serve import lifeline
middle = os.fork()
if middle == 0:
    parent = os.getpid()
    worker = os.fork()
    if worker == 0:
        sys.platform = "darwin"  # no prctl: the watcher thread
        lifeline.die_with_parent(parent)
        time.sleep(600)
        os._exit(3)
    print(worker, flush=True)
    os._exit(0)  # the worker's parent dies
os.waitpid(middle, 0)
"""
GRACE = 30  # longer than the held stream needs: it ends because it is released, not cut


def port_is_free(port: int) -> bool:
    """Nothing listens on ``port`` and a new server could bind it."""
    with socket.socket() as probe:
        if probe.connect_ex(("127.0.0.1", port)) != errno.ECONNREFUSED:
            return False
    with socket.socket() as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as a server binds: TIME_WAIT is no owner
        try:
            probe.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def draining(url: str, deadline: float) -> bool:
    """Poll ``/readyz`` until it answers 503 "draining"; False if it has not by ``deadline``."""
    while time.monotonic() < deadline:
        try:
            ready = httpx.get(f"{url}/readyz", timeout=WAIT)
        except httpx.TransportError:  # the worker with nothing to drain exits at once: its connections go
            continue
        if ready.status_code == 503 and ready.json()["status"] == "draining":
            return True
    return False


def test_workers_drain_and_exit_when_their_supervisor_is_killed(
    tmp_path: Path, chatgate_process: ChatgateProcess
) -> None:
    with fake_in_thread(fake=HoldingUpstream()) as upstream:
        assert isinstance(upstream, HoldingUpstream)
        url, process, started = two_workers(tmp_path, chatgate_process, upstream, GRACE)
        port, workers = int(url.rsplit(":", 1)[1]), sorted(started)
        stream = Stream("held")
        reader = threading.Thread(target=stream.read, args=(url,), daemon=True)
        reader.start()
        assert stream.first.wait(WAIT)

        killed = time.monotonic()
        process.send_signal(signal.SIGKILL)
        assert process.wait(timeout=WAIT) == -signal.SIGKILL
        assert draining(url, killed + WAIT)  # SIGTERM reached the workers
        draining_after = time.monotonic() - killed
        assert stream.ended_at is None

        upstream.released.set()
        reader.join(timeout=WAIT)
        assert stream.text() == f"w0 {LAST_WORD}" and stream.frames[-1] == "[DONE]"  # drained, not cut
        # The drain ends once nothing runs; it could not take longer than the grace and the ending.
        assert wait_gone(workers, GRACE + ENDING_SECONDS + WAIT) == []
        gone_after = time.monotonic() - killed
        reap(workers)  # the test process adopted them (tests/conftest.py)
        assert port_is_free(port)
    print(
        f"\nlifeline figures: after SIGKILL of the supervisor the workers drained from {draining_after * 1000:.0f} ms"
        f" and both were gone, the port free, {gone_after:.2f} s after it (one stream held until released)"
    )


def test_without_prctl_a_watcher_notices_the_parent_has_gone() -> None:
    started = subprocess.run([sys.executable, "-c", ORPHAN], capture_output=True, text=True, timeout=WAIT, check=True)
    worker = int(started.stdout)
    assert wait_gone([worker], WAIT) == []  # it checks once a second, then SIGTERMs itself
    reap([worker])  # adopted by the test process (tests/conftest.py)

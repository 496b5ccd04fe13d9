"""Workers die with their supervisor: SIGKILL the ``chatgate serve --workers 2`` parent, and each worker
drains (a running stream ends with its whole answer) and exits, leaving the port free."""

from __future__ import annotations

import errno
import signal
import socket
import threading
import time
from pathlib import Path

import httpx

from chatgate.drain import ENDING_SECONDS
from tests.conftest import ChatgateProcess
from tests.processes import reap, wait_gone
from tests.providers.fakes import fake_in_thread
from tests.serve.test_drain import CONFIG, LAST_WORD, WAIT, HoldingUpstream, Stream
from tests.serve.test_workers import worker_pids

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


def test_workers_drain_and_exit_when_their_supervisor_is_killed(
    tmp_path: Path, chatgate_process: ChatgateProcess
) -> None:
    with fake_in_thread(fake=HoldingUpstream()) as upstream:
        assert isinstance(upstream, HoldingUpstream)
        path = tmp_path / "c.toml"
        path.write_text(CONFIG.format(grace=GRACE, upstream=upstream.url))
        url, process = chatgate_process("--config", str(path), "--workers", "2")
        port = int(url.rsplit(":", 1)[1])
        deadline = time.monotonic() + WAIT
        while len(worker_pids(process.pid)) < 2 and time.monotonic() < deadline:
            time.sleep(0.1)
        workers = sorted(worker_pids(process.pid))
        assert len(workers) == 2
        stream = Stream("held")
        reader = threading.Thread(target=stream.read, args=(url,), daemon=True)
        reader.start()
        assert stream.first.wait(WAIT)

        killed = time.monotonic()
        process.send_signal(signal.SIGKILL)
        assert process.wait(timeout=WAIT) == -signal.SIGKILL
        ready = httpx.get(f"{url}/readyz", timeout=WAIT)
        while ready.status_code == 200 and time.monotonic() < killed + WAIT:
            ready = httpx.get(f"{url}/readyz", timeout=WAIT)
        draining_after = time.monotonic() - killed
        assert ready.status_code == 503 and ready.json()["status"] == "draining"  # SIGTERM reached the workers
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

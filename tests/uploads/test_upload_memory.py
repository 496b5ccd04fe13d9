"""What uploads cost a served process's memory: 16 parallel 10 MiB uploads to ``chatgate serve``.

Each upload is spooled to disk as it arrives and read into memory only for its one store write, at most
``WRITES_AT_ONCE`` at a time (app/files/store.py), so the process's resident memory grows by far
less than the 160 MiB sent. Measured from ``/proc/PID/status`` before and after, over SQLite and
PostgreSQL; the figures are printed (``-s`` shows them).
"""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import pytest

from tests.conftest import ChatgateProcess
from tests.store.conftest import new_store_url

KEYS = [f"key-{n}-0123456789abcdef" for n in range(4)]  # 4 uploads each: [files] max_uploads_in_flight_per_key
UPLOADS = 16
SIZE = 10 * 1024 * 1024
MIB = 1024 * 1024


def status_kib(pid: int, field: str) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    raise AssertionError(f"no {field}")


@pytest.fixture(params=["sqlite", "postgres"])
def store(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> str:
    return new_store_url(request, tmp_path_factory.mktemp("uploads"))


def test_16_parallel_10_mib_uploads_add_under_100_mib(
    chatgate_process: ChatgateProcess, tmp_path: Path, store: str
) -> None:
    keys = "".join(f'[[keys]]\nid = "k{n}"\nkey = "{key}"\n' for n, key in enumerate(KEYS))
    config = tmp_path / "chatgate.toml"
    config.write_text(f'[agents.a]\nmodel = "builtin:echo"\n[store]\nurl = "{store}"\n' + keys)
    url, process = chatgate_process("--config", str(config), "--log-level", "warning")
    body = os.urandom(SIZE)

    def upload(n: int) -> int:
        headers = {"authorization": f"Bearer {KEYS[n % len(KEYS)]}", "content-type": "image/png"}
        return httpx.post(f"{url}/agents/a/files", content=body, headers=headers, timeout=120).status_code

    before = status_kib(process.pid, "VmRSS")
    with ThreadPoolExecutor(UPLOADS) as pool:
        statuses = list(pool.map(upload, range(UPLOADS)))
    after = status_kib(process.pid, "VmRSS")
    peak = status_kib(process.pid, "VmHWM")
    print(
        f"\n{store.split(':')[0]}: RSS {before / 1024:.0f} MiB before, {after / 1024:.0f} MiB after"
        f" (+{(after - before) / 1024:.0f} MiB), peak {peak / 1024:.0f} MiB (+{(peak - before) / 1024:.0f} MiB)"
    )
    assert statuses == [201] * UPLOADS
    listed = httpx.get(f"{url}/agents/a/files", headers={"authorization": f"Bearer {KEYS[0]}"}).json()["files"]
    assert [f["size"] for f in listed] == [SIZE] * (UPLOADS // len(KEYS))
    assert (after - before) * 1024 < 100 * MIB

"""What ``chatgate serve`` does with hostile connections, over raw sockets to a real process on loopback.

Idle, slow-head and slow-body connections are closed within their ``[server]`` timeouts and the server's
descriptors return to where they were; heads over ``max_head_bytes`` get 431 and bodies over
``max_body_bytes`` 413 before they are held (the server's peak resident memory stays flat); streams outlast
every timeout.
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import socket
import time
from collections.abc import Callable
from pathlib import Path

import httpx
import pytest

from chatgate.serve.cli import main
from tests.conftest import ChatgateProcess

TIMEOUT = 0.5
"""Every timeout the served process is given, in seconds."""

MARGIN = 15.0
"""How much later than its timeout a connection may close before the test calls it held."""

USER_KEY = "user-key-0123456789abcdef"

CONFIG = f"""
[server]
head_timeout_seconds = {TIMEOUT}
body_timeout_seconds = {TIMEOUT}
idle_timeout_seconds = {TIMEOUT}
max_head_bytes = 16384
max_body_bytes = 65536

[[keys]]
id = "user"
key = "{USER_KEY}"

[store]
url = "sqlite:///{{store}}"

[files]
max_bytes = 4096

[agents.stored]
model = "builtin:echo"
conversations = "server"
default = true

[agents.slow]
model = "builtin:echo"
model_settings = {{ delay = 0.75 }}  # a gap longer than every timeout before each word
"""

Served = tuple[str, int]
"""The served process's address and pid."""


@pytest.fixture
def served(chatgate_process: ChatgateProcess, tmp_path: Path) -> Served:
    config = tmp_path / "chatgate.toml"
    config.write_text(CONFIG.replace("{store}", str(tmp_path / "threads.db")))
    url, process = chatgate_process("--config", str(config))
    return url, process.pid


def connect(url: str) -> socket.socket:
    host, port = url.removeprefix("http://").split(":")
    sock = socket.create_connection((host, int(port)))
    sock.settimeout(TIMEOUT + MARGIN)
    return sock


def answer_then_close(sock: socket.socket) -> bytes:
    """Everything the server sends until it closes (the socket's timeout fails the test if it never does)."""
    received = b""
    while chunk := sock.recv(65536):
        received += chunk
    sock.close()
    return received


def error_of(answer: bytes) -> tuple[int, str]:
    head, _, body = answer.partition(b"\r\n\r\n")
    return int(head.split(b" ", 2)[1]), json.loads(body)["error"]["code"]


def descriptors(pid: int) -> int:
    return len(os.listdir(f"/proc/{pid}/fd"))


def peak_resident_kib(pid: int) -> int:
    """The process's peak resident memory so far (VmHWM): a body read whole and freed still shows."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1])
    raise AssertionError("no VmHWM")


def settles(measure: Callable[[], int], target: int) -> int:
    """``measure()`` once it is at most ``target``, or its last value after the margin."""
    deadline = time.monotonic() + MARGIN
    value = measure()
    while value > target and time.monotonic() < deadline:
        time.sleep(0.1)
        value = measure()
    return value


def test_idle_slow_head_and_slow_body_connections_are_closed_and_their_descriptors_freed(served: Served) -> None:
    url, pid = served
    baseline = descriptors(pid)
    idle = [connect(url) for _ in range(20)]
    slow_heads = [connect(url) for _ in range(20)]
    slow_bodies = [connect(url) for _ in range(10)]
    for sock in slow_heads:
        sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\nX-Slow: ")
    for sock in slow_bodies:
        sock.sendall(
            b"POST /api/chat HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + USER_KEY.encode() + b"\r\n"
            b"Content-Type: application/json\r\nContent-Length: 1000\r\n\r\n{"
        )
    # The heads trickle on, a byte each tenth of a second: the head timeout bounds the whole head, not a gap.
    open_heads = list(slow_heads)
    heads: list[bytes] = []
    deadline = time.monotonic() + TIMEOUT + MARGIN
    while open_heads and time.monotonic() < deadline:
        readable, _, _ = select.select(open_heads, [], [], 0.1)
        for sock in readable:
            heads.append(answer_then_close(sock))
            open_heads.remove(sock)
        for sock in open_heads:
            with contextlib.suppress(OSError):  # closed since the select: it is readable next time
                sock.send(b"a")
    assert not open_heads, "slow heads still open"

    assert [answer_then_close(sock) for sock in idle] == [b""] * 20
    assert [error_of(answer) for answer in heads] == [(408, "head_timeout")] * 20
    assert [error_of(answer_then_close(sock)) for sock in slow_bodies] == [(408, "body_timeout")] * 10
    assert settles(lambda: descriptors(pid), baseline) <= baseline


def test_a_stream_outlasts_every_timeout_and_its_connection_is_kept_alive(served: Served) -> None:
    url, _ = served
    body = {"threadId": "t", "runId": "r", "messages": [{"id": "u1", "role": "user", "content": "go"}]}
    with httpx.Client(headers={"authorization": f"Bearer {USER_KEY}"}, timeout=TIMEOUT + MARGIN) as client:
        started = time.monotonic()
        streamed = client.post(f"{url}/agents/slow/ag-ui", json=body)
        took = time.monotonic() - started
        assert streamed.status_code == 200
        frames = [json.loads(line[6:]) for line in streamed.text.splitlines() if line.startswith("data: ")]
        assert "".join(frame.get("delta", "") for frame in frames).endswith("Last user message: go")
        assert frames[-1]["type"] == "RUN_FINISHED"
        assert took > 7 * 0.75  # not a timing check: 7 words, each after a silent gap longer than every timeout
        assert client.get(f"{url}/healthz").status_code == 200  # the connection was kept alive for more


def test_bytes_sent_after_a_request_do_not_cut_its_stream(served: Served) -> None:
    url, _ = served
    body = json.dumps({"threadId": "t", "runId": "r", "messages": [{"id": "u1", "role": "user", "content": "go"}]})
    sock = connect(url)
    sock.sendall(
        f"POST /agents/slow/ag-ui HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {USER_KEY}\r\n"
        f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n{body}".encode()
    )
    received = sock.recv(65536)  # the answer has begun: what is sent now is a read of its own
    sock.sendall(b"\r\n")  # the stray CRLF some clients send after a body: the start of a head that never comes
    while b"\r\n0\r\n\r\n" not in received:  # the stream's last chunk
        chunk = sock.recv(65536)
        assert chunk, f"cut after {received[-200:]!r}"
        received += chunk
    sock.close()
    assert b"RUN_FINISHED" in received and b'"delta":"go"' in received  # the last word, then the end


def test_huge_heads_get_431_without_growing_the_server(served: Served) -> None:
    url, pid = served
    before = peak_resident_kib(pid)
    answers = []
    for _ in range(4):  # unauthenticated, as in the probe that found it: 4 heads of 16 MiB
        sock = connect(url)
        sock.sendall(b"GET /agents/stored/threads HTTP/1.1\r\nHost: x\r\nX-Big: ")
        try:
            for _ in range(256):
                sock.sendall(b"a" * 65536)
            sock.sendall(b"\r\n\r\n")
        except (BrokenPipeError, ConnectionResetError):
            pass  # the server may close before all of it is sent; its answer is already on the way
        answers.append(answer_then_close(sock))
    assert [error_of(answer) for answer in answers] == [(431, "head_too_large")] * 4
    assert peak_resident_kib(pid) - before < 8 * 1024


@pytest.mark.parametrize("route", ["system-message", "reset"])
def test_a_body_over_the_cap_is_refused_before_it_is_read(served: Served, route: str) -> None:
    url, pid = served
    method = "PUT" if route == "system-message" else "POST"
    head = (
        f"{method} /agents/stored/threads/t1/{route} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {USER_KEY}\r\n"
        "Content-Type: application/json\r\n"
    )
    seeded = httpx.put(
        f"{url}/agents/stored/threads/t1/system-message",
        json={"system_message": None},
        headers={"authorization": f"Bearer {USER_KEY}"},
    )
    assert seeded.status_code == 200  # the thread exists: a reset of an unknown one is 404 before any body
    # A declared length over the cap is refused at once, before a byte of the body is sent.
    sock = connect(url)
    sock.sendall((head + "Content-Length: 268435456\r\n\r\n").encode())
    assert error_of(answer_then_close(sock)) == (413, "body_too_large")

    # A chunked body is refused once it passes the cap: 32 MiB sent, the server's peak memory stays flat.
    before = peak_resident_kib(pid)
    sock = connect(url)
    sock.sendall((head + "Transfer-Encoding: chunked\r\n\r\n").encode())
    chunk = b'{"system_message": "' + b"x" * 65500
    try:
        for _ in range(512):
            sock.sendall(b"%x\r\n%s\r\n" % (len(chunk), chunk))
    except (BrokenPipeError, ConnectionResetError):
        pass
    answer = answer_then_close(sock)
    assert error_of(answer) == (413, "body_too_large")
    assert b"max_body_bytes = 65536" in answer
    assert peak_resident_kib(pid) - before < 8 * 1024


@pytest.mark.parametrize(
    ("path", "headers", "status", "code"),
    [
        ("/agents/stored/files", {"content-type": "image/png"}, 413, "file_too_large"),
        ("/agents/stored/ag-ui", {"content-type": "application/json"}, 413, "body_too_large"),
        ("/agents/stored/files", {"content-type": "image/png,text/html"}, 415, "invalid_media_type"),
        ("/agents/stored/files", {"authorization": "Bearer not-a-key-0123456789"}, 401, "invalid_key"),
    ],
)
def test_an_answer_before_the_body_says_close_and_the_clients_next_request_works(
    served: Served, path: str, headers: dict[str, str], status: int, code: str
) -> None:
    url, _ = served
    with httpx.Client(base_url=url, headers={"authorization": f"Bearer {USER_KEY}"}) as client:
        kept = client.post("/agents/stored/files", content=b"\x89PNG", headers={"content-type": "image/png"})
        assert kept.status_code == 201 and "connection" not in kept.headers  # read whole: the connection stays
        refused = client.post(path, content=b"{" + b" " * 300_000, headers=headers)  # more than a socket buffer
        assert (refused.status_code, refused.json()["error"]["code"]) == (status, code)
        assert refused.headers["connection"] == "close"
        # The client's next request, which it would have sent on the same connection, gets its answer.
        assert client.get(kept.json()["url"]).content == b"\x89PNG"


def test_check_config_refuses_a_timeout_of_zero(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "chatgate.toml"
    path.write_text('[server]\nhead_timeout_seconds = 0\nmax_head_bytes = 10\n[agents.a]\nmodel = "builtin:echo"\n')
    assert main(["check-config", str(path)]) == 1
    problems = capsys.readouterr().err
    assert "server.head_timeout_seconds" in problems and "server.max_head_bytes" in problems

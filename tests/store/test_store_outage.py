"""PostgreSQL down: every store-touching route answers 503 ``store_unavailable`` with ``Retry-After``.

Before, each answered 500 with a traceback, and the connection was closed. The test stops its own
PostgreSQL (not the session's) under a running chatgate, sends every route down one keep-alive
connection, then starts it again: the next request is answered from the same thread.
"""

from __future__ import annotations

import http.client
import json
import logging
import time
from collections.abc import Iterator
from urllib.parse import urlsplit

import httpx
import pytest

from chatgate.web.app import STORE_RETRY_AFTER_SECONDS, create_app
from tests.conftest import LiveServer, make_config
from tests.servers import PostgresServer, postgres_server

USECHAT = {"id": "t1", "message": {"id": "m1", "role": "user", "parts": [{"type": "text", "text": "hi"}]}}
AG_UI = {"threadId": "t1", "runId": "r", "messages": [{"id": "m9", "role": "user", "content": "hi"}]}
ROUTES = [
    ("GET", "/agents/bot/threads", None),
    ("GET", "/agents/bot/threads/t1", None),
    ("GET", "/agents/bot/threads/t1/messages", None),
    ("PUT", "/agents/bot/threads/t1/system-message", {"system_message": None}),
    ("POST", "/agents/bot/threads/t1/reset", {}),
    ("POST", "/agents/bot/threads/t1/stop", None),
    ("DELETE", "/agents/bot/threads/t1", None),
    ("POST", "/agents/bot/chat", USECHAT),
    ("POST", "/agents/bot/ag-ui", AG_UI),
    ("GET", "/agents/bot/chat/t1/stream", None),
    ("GET", "/agents/bot/files", None),
    ("GET", "/agents/bot/files/file_" + "0" * 24, None),
    ("DELETE", "/agents/bot/files/file_" + "0" * 24, None),
]


@pytest.fixture
def database() -> Iterator[PostgresServer]:
    with postgres_server() as server:
        yield server


def _request(connection: http.client.HTTPConnection, method: str, path: str, body: object) -> tuple[int, dict, str]:
    headers = {"content-type": "application/json"} if body is not None else {}
    connection.request(method, path, body=json.dumps(body) if body is not None else None, headers=headers)
    response = connection.getresponse()
    answer = response.status, dict(response.getheaders()), response.read().decode()
    if answer[1].get("connection") == "close":  # refused before its body was read: a new connection, as a client would
        connection.close()
        connection.connect()
    return answer


def test_every_store_route_is_503_with_retry_after_while_postgres_is_down(
    database: PostgresServer, caplog: pytest.LogCaptureFixture
) -> None:
    agent = {"model": "builtin:echo", "conversations": "server"}
    server = LiveServer(create_app(make_config({"bot": agent}, store={"url": database.url})))
    server.start()
    address = urlsplit(server.url)
    connection = http.client.HTTPConnection(address.hostname or "", address.port, timeout=30)
    connection.auto_open = 0  # one connection throughout: a reset fails the next request
    connection.connect()
    try:
        status, _, _ = _request(connection, "POST", "/agents/bot/chat", USECHAT)
        assert status == 200
        database.stop()
        with caplog.at_level(logging.WARNING):
            answers = [(path, *_request(connection, method, path, body)) for method, path, body in ROUTES]
        for path, status, headers, text in answers:
            assert status == 503, (path, status, text)
            assert json.loads(text)["error"]["code"] == "store_unavailable", path
            assert headers["retry-after"] == str(STORE_RETRY_AFTER_SECONDS), path
        assert _request(connection, "GET", "/healthz", None)[0] == 200
        database.start()  # back: the pool reconnects, and the thread is still there
        status, _, text = _request(connection, "GET", "/agents/bot/threads/t1/messages", None)
        assert status == 200 and [m["role"] for m in json.loads(text)["messages"]] == ["user", "assistant"]
    finally:
        connection.close()
        server.stop()
    # asyncpg's pool warns (with its cause) that it cannot reconnect; nothing is logged as an error.
    assert not [record for record in caplog.records if record.levelno >= logging.ERROR], "no traceback for an outage"
    outages = [record for record in caplog.records if "PostgreSQL is unavailable" in record.getMessage()]
    assert len(outages) == len(ROUTES)


def test_a_stream_running_when_postgres_goes_down_is_delivered_whole_and_saved_on_its_return(
    database: PostgresServer, caplog: pytest.LogCaptureFixture
) -> None:
    # A word every 0.3 s: the answer is still streaming when the database has stopped (pg_ctl waits).
    # The client gets the whole answer; the finished turn is retried until the store is back (issue 23).
    agent = {"model": "builtin:echo", "conversations": "server", "model_settings": {"delay": 0.3}}
    server = LiveServer(create_app(make_config({"bot": agent}, store={"url": database.url})))
    server.start()
    chunks: list[dict] = []
    try:
        with httpx.stream("POST", f"{server.url}/agents/bot/chat", json=USECHAT, timeout=60) as response:
            lines = response.iter_lines()
            for line in lines:
                if line.startswith("data: {"):
                    chunks.append(json.loads(line[len("data: ") :]))
                    if chunks[-1]["type"] == "text-delta":
                        break
            with caplog.at_level(logging.WARNING):
                database.stop()
                rest = list(lines)
        chunks += [json.loads(line[len("data: ") :]) for line in rest if line.startswith("data: {")]
        database.start()
        database.wait_ready()
        answer = "".join(chunk["delta"] for chunk in chunks if chunk["type"] == "text-delta")
        roles: list[str] = []
        for _ in range(100):  # the retry waits at most a second between tries
            reply = httpx.get(f"{server.url}/agents/bot/threads/t1/messages", timeout=10)
            if reply.status_code == 200:
                roles = [message["role"] for message in reply.json()["messages"]]
                if roles == ["user", "assistant"]:
                    stored = reply.json()["messages"][1]["parts"]
                    break
            time.sleep(0.1)
    finally:
        server.stop()
    kinds = [chunk["type"] for chunk in chunks]
    assert "error" not in kinds and kinds[-1] == "finish", kinds[-6:]
    assert [line for line in rest if line][-1] == "data: [DONE]"
    assert roles == ["user", "assistant"], roles
    assert "".join(part.get("text", "") for part in stored if part["type"] == "text") == answer
    assert not [record for record in caplog.records if record.levelno >= logging.ERROR]

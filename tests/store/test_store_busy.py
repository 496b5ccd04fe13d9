"""Another connection holding the store's lock: 503 ``store_busy`` with ``Retry-After``, never a 500.

SQLite: a second connection on the same file holds ``BEGIN EXCLUSIVE`` (as another process writing
would); PostgreSQL: a session holds ``LOCK TABLE ... IN ACCESS EXCLUSIVE MODE``. Before, SQLite's
"database is locked" was a 500 with a traceback, and PostgreSQL waited for the lock for ever.
After the stream started, a locked store ends the run in protocol with the same code.
"""

from __future__ import annotations

import asyncio
import json
import logging
import sqlite3
import threading
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import AsyncExitStack, asynccontextmanager, contextmanager
from pathlib import Path
from typing import Any

import asyncpg
import httpx
import pytest
from starlette.types import Receive, Scope, Send

from chatgate.config import Config
from chatgate.errors import StoreBusy
from chatgate.store.postgres import POOL_SIZE
from chatgate.web.app import ChatgateApp, create_app
from tests import sample_tools
from tests.conftest import LiveServer, make_config
from tests.e2e.approval_flows import events_of, executions
from tests.providers.fakes import Reply, fake_in_thread, openai_chunk, text_reply
from tests.providers.support import provider_table

Serve = Callable[[Config], str]
AGAIN = {"id": "t1", "message": {"id": "m2", "role": "user", "parts": [{"type": "text", "text": "again"}]}}
AG_UI = {"threadId": "t2", "runId": "r", "messages": [{"id": "m9", "role": "user", "content": "hi"}]}
WRITES = [
    ("PUT", "/agents/bot/threads/t1/system-message", {"system_message": None}),
    ("POST", "/agents/bot/threads/t1/reset", {}),
    ("DELETE", "/agents/bot/threads/t1", None),
    ("POST", "/agents/bot/chat", AGAIN),
    ("POST", "/agents/bot/ag-ui", AG_UI),
]
READS = [
    ("GET", "/agents/bot/threads", None),
    ("GET", "/agents/bot/threads/t1", None),
    ("GET", "/agents/bot/threads/t1/messages", None),
    ("POST", "/agents/bot/threads/t1/stop", None),
]


@asynccontextmanager
async def store_locked(url: str) -> AsyncIterator[None]:
    """Hold the store's write lock from another connection, as another process would."""
    if url.startswith("sqlite:///"):
        connection = sqlite3.connect(url.removeprefix("sqlite:///"), isolation_level=None)
        connection.execute("BEGIN EXCLUSIVE")
        try:
            yield
        finally:
            connection.execute("ROLLBACK")
            connection.close()
        return
    session = await asyncpg.connect(url)
    transaction = session.transaction()
    await transaction.start()
    await session.execute("LOCK TABLE threads, messages IN ACCESS EXCLUSIVE MODE")
    try:
        yield
    finally:
        await transaction.rollback()
        await session.close()


async def test_every_store_route_is_503_store_busy_while_another_connection_holds_the_lock(
    serve: Serve, store_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    agent = {"model": "builtin:echo", "conversations": "server"}
    base = serve(make_config({"bot": agent}, store={"url": store_url, "lock_timeout_seconds": 0.1}))
    first = {"id": "t1", "message": {"id": "m1", "role": "user", "parts": [{"type": "text", "text": "hi"}]}}
    async with httpx.AsyncClient(base_url=base, timeout=30) as client:
        assert (await client.post("/agents/bot/chat", json=first)).status_code == 200
        with caplog.at_level(logging.WARNING):
            async with store_locked(store_url):
                writes = [await client.request(m, path, json=body) for m, path, body in WRITES]
                reads = [await client.request(m, path, json=body) for m, path, body in READS]
        statuses = [answer.status_code for answer in writes + reads]
        assert 500 not in statuses, statuses
        assert [answer.status_code for answer in writes] == [503] * len(WRITES), [a.text for a in writes]
        for answer in writes + reads:
            if answer.status_code == 503:  # SQLite's WAL lets reads through; PostgreSQL's table lock does not
                assert answer.json()["error"]["code"] == "store_busy", answer.text
                assert answer.headers["retry-after"] == str(StoreBusy.retry_after)
            else:
                assert answer.status_code in (200, 404), (answer.request.url, answer.text)
        # Nothing the busy requests sent was stored; once the lock is gone, the thread goes on.
        stored = (await client.get("/agents/bot/threads/t1/messages")).json()["messages"]
        assert [message["role"] for message in stored] == ["user", "assistant"]
        assert (await client.get("/agents/bot/threads/t2")).status_code == 404
        again = {**first, "message": {**first["message"], "id": "m3"}}
        assert (await client.post("/agents/bot/chat", json=again)).status_code == 200
        stored = (await client.get("/agents/bot/threads/t1/messages")).json()["messages"]
        assert len(stored) == 4
    busy = [r for r in caplog.records if "locked by another" in r.getMessage()]
    assert len(busy) == statuses.count(503), [r.getMessage() for r in busy]
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR], "a busy store is no error with a traceback"


def _two_calls(database: Path, log: Path) -> Reply:
    """One model turn calling ``lock_store`` then ``record``, both needing approval."""
    calls = [("call_lock", "lock_store", {"path": str(database)}), ("call_record", "record", {"path": str(log)})]
    chunks = [
        openai_chunk({"tool_calls": [{"index": i, "id": call_id, "type": "function", "function": function}]})
        for i, (call_id, name, arguments) in enumerate(calls)
        for function in [{"name": name, "arguments": json.dumps(arguments)}]
    ]
    return Reply([*chunks, openai_chunk({}, "tool_calls"), b"data: [DONE]\n\n"])


@pytest.fixture
def released() -> Iterator[None]:
    yield
    sample_tools.release_store()


def test_a_store_locked_after_the_stream_started_ends_the_run_in_protocol_with_store_busy(
    serve: Serve, tmp_path: Path, caplog: pytest.LogCaptureFixture, released: None
) -> None:
    # Two approved calls: the first (lock_store) takes the SQLite lock and keeps it, so the second's
    # approval cannot be claimed: the run, streaming already, ends with RUN_ERROR store_busy.
    database, log = tmp_path / "threads.db", tmp_path / "runs.log"
    tools: dict[str, Any] = {
        name: {"function": f"tests.sample_tools:{name}", "requires_approval": True} for name in ("lock_store", "record")
    }
    with fake_in_thread(_two_calls(database, log), text_reply("openai", "done")) as upstream:
        config = make_config(
            {"bot": {"model": "up:m", "tools": tools, "conversations": "server"}},
            providers={"up": provider_table("openai", upstream.url)},
            server={"approval_secret": "a-secret-of-enough-length"},
            store={"url": f"sqlite:///{database}", "lock_timeout_seconds": 0.1},
        )
        base = serve(config)
        user = {"id": "u1", "role": "user", "content": "go"}
        asked = events_of(httpx.post(f"{base}/agents/bot/ag-ui", json={**AG_UI, "messages": [user]}, timeout=30))
        interrupts = asked[-1]["outcome"]["interrupts"]
        assert [i["toolCallId"] for i in interrupts] == ["call_lock", "call_record"]
        calls = [
            {"id": e["toolCallId"], "type": "function", "function": {"name": e["toolCallName"], "arguments": ""}}
            for e in asked
            if e["type"] == "TOOL_CALL_START"
        ]
        for call in calls:
            call["function"]["arguments"] = "".join(
                e["delta"] for e in asked if e["type"] == "TOOL_CALL_ARGS" and e["toolCallId"] == call["id"]
            )
        resume = [{"interruptId": i["id"], "status": "resolved"} for i in interrupts]
        body = {**AG_UI, "messages": [user, {"id": "a1", "role": "assistant", "toolCalls": calls}], "resume": resume}
        with caplog.at_level(logging.WARNING):
            response = httpx.post(f"{base}/agents/bot/ag-ui", json=body, timeout=30)
        events = events_of(response)  # a 200 stream of JSON frames, whatever happened in it
        assert len(upstream.requests) == 1  # the model was not called again
    assert events[-1]["type"] == "RUN_ERROR" and events[-1]["code"] == "store_busy", events[-3:]
    results = [e for e in events if e["type"] == "TOOL_CALL_RESULT"]
    assert [r["toolCallId"] for r in results] == ["call_lock"] and results[0]["content"] == "locked"
    assert executions(log) == 0  # the second call never ran
    assert [r for r in caplog.records if "locked by another" in r.getMessage()]
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR and "not recorded" not in r.getMessage()]


class _OnItsLoop:
    """The app, remembering the event loop uvicorn runs it on (the lifespan call comes first)."""

    def __init__(self, app: ChatgateApp) -> None:
        self.app = app
        self.loop: asyncio.AbstractEventLoop | None = None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        self.loop = asyncio.get_running_loop()
        await self.app(scope, receive, send)


@contextmanager
def every_pooled_connection_held(served: _OnItsLoop) -> Iterator[None]:
    """Take all ``POOL_SIZE`` connections through the store's own engine, on the server's loop, until the end."""
    assert served.loop is not None
    engine = served.app.services.running.store.engine
    held, release = threading.Event(), threading.Event()

    async def hold() -> None:
        async with AsyncExitStack() as stack:
            for _ in range(POOL_SIZE):
                await stack.enter_async_context(engine.read())
            held.set()
            await asyncio.to_thread(release.wait)

    holding = asyncio.run_coroutine_threadsafe(hold(), served.loop)
    try:
        assert held.wait(timeout=30), holding
        yield
    finally:
        release.set()
        holding.result(timeout=30)


@pytest.mark.parametrize("store_url", ["postgres"], indirect=True)
def test_a_request_finding_every_pooled_connection_in_use_is_503_store_busy(
    store_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    # Before, a request waited for a free connection from the asyncpg pool for ever (a hung request).
    agent = {"model": "builtin:echo", "conversations": "server"}
    served = _OnItsLoop(create_app(make_config({"bot": agent}, store={"url": store_url, "lock_timeout_seconds": 0.1})))
    server = LiveServer(served)
    server.start()
    first = {"id": "t1", "message": {"id": "m1", "role": "user", "parts": [{"type": "text", "text": "hi"}]}}
    try:
        with httpx.Client(base_url=server.url, timeout=30) as client:
            assert client.post("/agents/bot/chat", json=first).status_code == 200
            with caplog.at_level(logging.WARNING), every_pooled_connection_held(served):
                busy = [client.post("/agents/bot/chat", json=AGAIN), client.get("/agents/bot/threads/t1/messages")]
            for answer in busy:
                assert answer.status_code == 503, answer.text
                assert answer.json()["error"]["code"] == "store_busy", answer.text
                assert answer.headers["retry-after"] == str(StoreBusy.retry_after)
            stored = client.get("/agents/bot/threads/t1/messages").json()["messages"]
            assert [message["role"] for message in stored] == ["user", "assistant"]  # the busy turn stored nothing
            assert client.post("/agents/bot/chat", json=AGAIN).status_code == 200
            assert len(client.get("/agents/bot/threads/t1/messages").json()["messages"]) == 4
    finally:
        server.stop()
    pooled = [r for r in caplog.records if "pooled connections stayed in use" in r.getMessage()]
    assert len(pooled) == len(busy), [r.getMessage() for r in caplog.records]
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR], "a busy pool is no error with a traceback"

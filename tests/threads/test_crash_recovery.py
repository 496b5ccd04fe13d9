"""kill -9 of the producing replica: the cut-off answer comes back from the run log, the thread is free.

Two (or three) ``chatgate serve`` replicas on one Redis and one store (SQLite file or PostgreSQL), an
answer streamed slowly by a fake upstream over real HTTP. The producer is killed at several points of
the answer; the follower on the other replica ends in protocol, the words it received are stored as a
``partial`` turn (rebuilt from the run's journal, app/threads/recovery.py), and the next turn is taken
long before the 15 s takeover of a silent run.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import asyncpg
import httpx
import pytest

from chatgate.store import STALE_RUN_SECONDS
from tests.conftest import ChatgateProcess
from tests.providers.fakes import FakeUpstream, Reply, fake_in_thread, openai_chunk, text_reply
from tests.store.conftest import new_store_url
from tests.threads.test_replicas import _read, _wait_for

LEASE = 1.0
WORDS = 120
PAUSE = 0.06  # seconds between words: the answer takes about 7 s
SLOW = Reply(
    [piece for n in range(WORDS) for piece in (openai_chunk({"content": f"word{n} "}), PAUSE)]
    + [openai_chunk({}, "stop"), b"data: [DONE]\n\n"]
)
NEXT = text_reply("openai", "The next answer.")


def _config(tmp_path: Path, store: str, redis_url: str, upstream: str) -> Path:
    config = tmp_path / "chatgate.toml"
    config.write_text(
        f'[server]\nredis_url = "{redis_url}"\nrun_log_lease_seconds = {LEASE}\n\n'
        f'[store]\nurl = "{store}"\n\n'
        f'[providers.up]\nkind = "openai"\nbase_url = "{upstream}"\napi_key = "sk-test"\nretries = 0\n\n'
        '[agents.bot]\nmodel = "up:m"\nconversations = "server"\n'
    )
    return config


@pytest.fixture(params=["sqlite", "postgres"])
def shared_store(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """One store every replica of a test shares: a SQLite file, or a fresh PostgreSQL database."""
    return new_store_url(request, tmp_path)


@pytest.fixture
def upstream() -> Iterator[FakeUpstream]:
    """The slow answer, then quick ones."""
    with fake_in_thread(SLOW, NEXT) as fake:
        yield fake


def _user(chat_id: str, n: int, text: str) -> dict[str, Any]:
    return {"id": chat_id, "message": {"id": f"u{n}", "role": "user", "parts": [{"type": "text", "text": text}]}}


def _text_of(lines: list[str]) -> str:
    """The text a useChat client shows from these stream lines."""
    events = [json.loads(line[6:]) for line in lines if line.startswith("data: {")]
    return "".join(event["delta"] for event in events if event["type"] == "text-delta")


def _next_turn(url: str, chat_id: str) -> tuple[float, list[str], int]:
    """Post the next user turn until it is taken: (when, its stream's lines, 409s met on the way)."""
    started = time.monotonic()
    busy = 0
    while True:
        with httpx.stream("POST", f"{url}/agents/bot/chat", json=_user(chat_id, 2, "again"), timeout=30) as response:
            if response.status_code == 200:
                taken = time.monotonic()
                return taken, [line for line in response.iter_lines() if line], busy
            response.read()
            assert response.status_code == 409, response.text
            assert response.json()["error"]["code"] == "thread_busy"
            assert response.headers["retry-after"] == "1"
            busy += 1
        assert time.monotonic() - started < STALE_RUN_SECONDS + 5, "the thread never became free"
        time.sleep(0.1)


def _history(url: str, chat_id: str) -> list[tuple[str, str, str]]:
    messages = httpx.get(f"{url}/agents/bot/threads/{chat_id}/messages").json()["messages"]
    return [
        (
            m["role"],
            m.get("metadata", {}).get("chatgate", {}).get("status", "complete") if m["role"] == "assistant" else "",
            "".join(p.get("text", "") for p in m["parts"] if p["type"] == "text"),
        )
        for m in messages
    ]


@pytest.mark.parametrize("kill_at", [0.3, 0.7, 1.5, 5.0])
def test_a_killed_producer_leaves_every_word_a_follower_saw(
    chatgate_process: ChatgateProcess,
    redis_url: str,
    shared_store: str,
    upstream: FakeUpstream,
    tmp_path: Path,
    kill_at: float,
) -> None:
    config = _config(tmp_path, shared_store, redis_url, upstream.url)
    (url_a, process_a), (url_b, _) = (
        chatgate_process("--config", str(config)),
        chatgate_process("--config", str(config)),
    )
    started, _starter = _read(url_a, "/agents/bot/chat", "POST", _user("c1", 1, "talk"))
    _wait_for(started, '"text-delta"')
    first_word = time.monotonic()
    following, follower = _read(url_b, "/agents/bot/chat/c1/stream")
    time.sleep(max(0.0, first_word + kill_at - time.monotonic()))
    process_a.kill()  # SIGKILL: no ending, no final save, no lease release
    process_a.wait(timeout=10)
    killed_at = time.monotonic()
    follower.join(timeout=LEASE + 10)
    assert not follower.is_alive()
    assert '"type":"error"' in following[-3] and "server producing it stopped" in following[-3]
    assert '"type":"finish"' in following[-2] and following[-1] == "data: [DONE]"
    seen = _text_of(following)
    assert seen.startswith("word0 ")

    accepted_at, next_lines, busy = _next_turn(url_b, "c1")
    taken = accepted_at - killed_at
    assert next_lines[-1] == "data: [DONE]" and _text_of(next_lines) == "The next answer."
    history = _history(url_b, "c1")
    assert [(role, status) for role, status, _ in history] == [
        ("user", ""),
        ("assistant", "partial"),
        ("user", ""),
        ("assistant", "complete"),
    ]
    stored = history[1][2]
    assert stored.startswith(seen)  # every word the follower received, and only the answer's words
    assert set(stored.split()) <= {f"word{n}" for n in range(WORDS)}
    assert len(upstream.requests) == 2  # the dead turn was not asked again
    assert taken < STALE_RUN_SECONDS  # freed by the recovery, not by the takeover of a silent run
    print(
        f"\nKILL-TABLE kill_at={kill_at} store={shared_store.split(':')[0]} seen={len(seen.split())}"
        f" stored={len(stored.split())} next_turn_after_kill={taken:.2f}s busy_409s={busy}"
    )


@pytest.mark.parametrize("shared_store", ["postgres"], indirect=True)
def test_with_no_follower_the_next_request_recovers_the_dead_run(
    chatgate_process: ChatgateProcess, redis_url: str, shared_store: str, upstream: FakeUpstream, tmp_path: Path
) -> None:
    config = _config(tmp_path, shared_store, redis_url, upstream.url)
    (url_a, process_a), (url_b, _) = (
        chatgate_process("--config", str(config)),
        chatgate_process("--config", str(config)),
    )
    started, _starter = _read(url_a, "/agents/bot/chat", "POST", _user("c1", 1, "talk"))
    _wait_for(started, '"text-delta"', 10)
    process_a.kill()
    process_a.wait(timeout=10)
    _accepted_at, _lines, busy = _next_turn(url_b, "c1")  # 409s with Retry-After until the lease lapses
    assert busy >= 1
    history = _history(url_b, "c1")
    assert [(role, status) for role, status, _ in history] == [
        ("user", ""),
        ("assistant", "partial"),
        ("user", ""),
        ("assistant", "complete"),
    ]
    shown = _text_of(started)  # the producer's own client may be a flush ahead of Redis
    # The producer's own client may have read the last flush interval's words before they reached Redis.
    assert history[1][2].startswith("word0 ") and shown.startswith(history[1][2])


def _ag_ui(url: str, body: dict[str, Any]) -> list[dict[str, Any]]:
    with httpx.stream("POST", f"{url}/agents/bot/ag-ui", json=body, timeout=30) as response:
        assert response.status_code == 200, response.read()
        return [json.loads(line[6:]) for line in response.iter_lines() if line.startswith("data: ")]


@pytest.mark.parametrize("shared_store", ["sqlite"], indirect=True)
def test_an_ag_ui_run_killed_mid_answer_is_recovered_and_hydrates(
    chatgate_process: ChatgateProcess, redis_url: str, shared_store: str, upstream: FakeUpstream, tmp_path: Path
) -> None:
    config = _config(tmp_path, shared_store, redis_url, upstream.url)
    (url_a, process_a), (url_b, _) = (
        chatgate_process("--config", str(config)),
        chatgate_process("--config", str(config)),
    )
    user = {"id": "u1", "role": "user", "content": "talk"}
    body = {"threadId": "t1", "runId": "r1", "messages": [user], "tools": [], "context": []}
    started, _starter = _read(url_a, "/agents/bot/ag-ui", "POST", body)
    _wait_for(started, "TEXT_MESSAGE_CONTENT")
    following, follower = _read(url_b, "/agents/bot/ag-ui", "POST", {**body, "runId": "r2"})  # a reconnect
    _wait_for(following, "TEXT_MESSAGE_CONTENT", 8)
    process_a.kill()
    process_a.wait(timeout=10)
    follower.join(timeout=LEASE + 10)
    events = [json.loads(line[6:]) for line in following if line.startswith("data: ")]
    assert events[-1]["type"] == "RUN_ERROR" and events[-1]["code"] == "producer_lost"
    seen = "".join(event["delta"] for event in events if event["type"] == "TEXT_MESSAGE_CONTENT")
    hydrated = _ag_ui(url_b, {**body, "runId": "r3"})  # the run is over: a hydrate
    assert [event["type"] for event in hydrated] == ["RUN_STARTED", "MESSAGES_SNAPSHOT", "RUN_FINISHED"]
    snapshot = hydrated[1]["messages"]
    assert [m["role"] for m in snapshot] == ["user", "assistant"] and snapshot[1]["content"].startswith(seen)
    again = {"id": "u2", "role": "user", "content": "again"}
    answered = _ag_ui(url_b, {**body, "runId": "r4", "messages": [*snapshot, again]})
    assert answered[-1]["type"] == "RUN_FINISHED"
    history = _history(url_b, "t1")
    assert [(role, status) for role, status, _ in history] == [
        ("user", ""),
        ("assistant", "partial"),
        ("user", ""),
        ("assistant", "complete"),
    ]
    assert history[1][2].startswith(seen) and history[3][2] == "The next answer."
    assert len(upstream.requests) == 2


@pytest.mark.parametrize("shared_store", ["postgres"], indirect=True)
def test_two_followers_on_two_replicas_racing_store_one_partial_turn(
    chatgate_process: ChatgateProcess, redis_url: str, shared_store: str, upstream: FakeUpstream, tmp_path: Path
) -> None:
    config = _config(tmp_path, shared_store, redis_url, upstream.url)
    (url_a, process_a), (url_b, _), (url_c, _) = [chatgate_process("--config", str(config)) for _ in range(3)]
    started, _starter = _read(url_a, "/agents/bot/chat", "POST", _user("c1", 1, "talk"))
    _wait_for(started, '"text-delta"')
    followers = [_read(url, "/agents/bot/chat/c1/stream") for url in (url_b, url_c)]
    for lines, _ in followers:
        _wait_for(lines, '"text-delta"', 8)
    process_a.kill()
    process_a.wait(timeout=10)
    for lines, follower in followers:
        follower.join(timeout=LEASE + 10)
        assert lines[-1] == "data: [DONE]" and "server producing it stopped" in lines[-3]
    history = _history(url_b, "c1")
    assert [(role, status) for role, status, _ in history] == [("user", ""), ("assistant", "partial")]
    for lines, _ in followers:
        assert history[1][2].startswith(_text_of(lines))
    logs = "".join(path.read_text() for path in tmp_path.glob("chatgate-*.log"))
    assert logs.count("is saved from the run log") == 1  # both followers recovered; one wrote the turn


TOOL_MODULE = '''
import time


def slow_lookup(q: str, path: str) -> str:
    """Counts its runs in a file, then takes its time."""
    with open(path, "a", encoding="utf-8") as file:
        file.write("ran\\n")
    time.sleep(5)
    return "found"


def record(path: str) -> str:
    """Counts its runs in a file."""
    with open(path, "a", encoding="utf-8") as file:
        file.write("ran\\n")
    return "recorded"
'''


@pytest.mark.parametrize("shared_store", ["sqlite"], indirect=True)
def test_a_producer_killed_during_a_server_tool_leaves_the_call(
    chatgate_process: ChatgateProcess, redis_url: str, shared_store: str, tmp_path: Path
) -> None:
    (tmp_path / "crash_tools.py").write_text(TOOL_MODULE)
    ran = tmp_path / "ran.txt"
    arguments = json.dumps({"q": "x", "path": str(ran)})
    call = {"index": 0, "id": "call_1", "type": "function", "function": {"name": "lookup", "arguments": arguments}}
    asks = Reply(
        [
            openai_chunk({"content": "Let me look. "}),
            openai_chunk({"tool_calls": [call]}),
            openai_chunk({}, "tool_calls"),
            b"data: [DONE]\n\n",
        ]
    )
    with fake_in_thread(asks, NEXT) as fake:
        config = _config(tmp_path, shared_store, redis_url, fake.url)
        config.write_text(config.read_text() + 'tools = { lookup = { function = "crash_tools:slow_lookup" } }\n')
        (url_a, process_a), (url_b, _) = [chatgate_process("--config", str(config)) for _ in range(2)]
        started, _starter = _read(url_a, "/agents/bot/chat", "POST", _user("c1", 1, "look it up"))
        _wait_for(started, '"tool-input-available"')
        following, follower = _read(url_b, "/agents/bot/chat/c1/stream")
        _wait_for(following, '"tool-input-available"')
        deadline = time.monotonic() + 10
        while not ran.exists():  # the tool is running
            assert time.monotonic() < deadline
            time.sleep(0.02)
        process_a.kill()
        process_a.wait(timeout=10)
        follower.join(timeout=LEASE + 10)
        assert following[-1] == "data: [DONE]" and "server producing it stopped" in following[-3]
        messages = httpx.get(f"{url_b}/agents/bot/threads/c1/messages").json()["messages"]
        answer = messages[1]
        assert answer["metadata"]["chatgate"]["status"] == "partial"
        parts = [(part["type"], part.get("text") or part.get("toolCallId")) for part in answer["parts"]]
        assert parts == [("step-start", None), ("text", "Let me look. "), ("tool-lookup", "call_1")]
        assert answer["parts"][2]["state"] == "input-available"  # the call, without the result it never had
        _accepted_at, lines, _busy = _next_turn(url_b, "c1")
        assert _text_of(lines) == "The next answer."
        assert len(fake.requests) == 2 and ran.read_text() == "ran\n"  # no model call or tool run again


@pytest.mark.parametrize("shared_store", ["sqlite"], indirect=True)
def test_an_approval_pending_when_its_replica_dies_is_answered_on_another(
    chatgate_process: ChatgateProcess, redis_url: str, shared_store: str, tmp_path: Path
) -> None:
    (tmp_path / "crash_tools.py").write_text(TOOL_MODULE)
    ran = tmp_path / "runs.log"
    config = tmp_path / "chatgate.toml"
    config.write_text(
        f'[server]\nredis_url = "{redis_url}"\nrun_log_lease_seconds = {LEASE}\n'
        'approval_secret = "a-secret-of-enough-length"\n\n'
        f'[store]\nurl = "{shared_store}"\n\n'
        '[agents.bot]\nmodel = "builtin:echo"\nconversations = "server"\n'
        'tools = { record = { function = "crash_tools:record", requires_approval = true } }\n'
    )
    (url_a, process_a), (url_b, _) = [chatgate_process("--config", str(config)) for _ in range(2)]
    user = {"id": "u1", "role": "user", "content": "/call record " + json.dumps({"path": str(ran)})}
    asked = _ag_ui(url_a, {"threadId": "t1", "runId": "r1", "messages": [user], "tools": [], "context": []})
    (interrupt,) = asked[-1]["outcome"]["interrupts"]
    process_a.kill()  # while the approval waits for its answer
    process_a.wait(timeout=10)
    resume = [{"interruptId": interrupt["id"], "status": "resolved"}]
    answered = _ag_ui(
        url_b, {"threadId": "t1", "runId": "r2", "messages": [], "tools": [], "context": [], "resume": resume}
    )
    assert "TOOL_CALL_RESULT" in [event["type"] for event in answered]
    assert answered[-1]["type"] == "RUN_FINISHED"
    assert ran.read_text() == "ran\n"  # the tool ran once, on B


async def _database_reachable(server_url: str, name: str, reachable: bool) -> None:
    """Open or shut one database: shut, its connections are cut and new ones refused (a store outage)."""
    connection = await asyncpg.connect(server_url)
    try:
        await connection.execute(f'ALTER DATABASE "{name}" ALLOW_CONNECTIONS {str(reachable).lower()}')
        if not reachable:
            await connection.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()",
                name,
            )
    finally:
        await connection.close()


@pytest.mark.parametrize("shared_store", ["postgres"], indirect=True)
def test_postgres_down_around_a_runs_end_loses_no_delivered_word(
    chatgate_process: ChatgateProcess,
    redis_url: str,
    postgres_url: str,
    shared_store: str,
    upstream: FakeUpstream,
    tmp_path: Path,
) -> None:
    config = _config(tmp_path, shared_store, redis_url, upstream.url)
    (url_a, _), (url_b, _) = [chatgate_process("--config", str(config)) for _ in range(2)]
    name = shared_store.rsplit("/", 1)[1]
    started, starter = _read(url_a, "/agents/bot/chat", "POST", _user("c1", 1, "talk"))
    _wait_for(started, '"text-delta"')
    following, follower = _read(url_b, "/agents/bot/chat/c1/stream")
    _wait_for(following, '"text-delta"', WORDS - 10)
    asyncio.run(_database_reachable(postgres_url, name, False))  # down before the run's end
    for reader in (starter, follower):
        reader.join(timeout=20)
    for lines in (started, following):  # the whole answer, ended in protocol, though nothing could be saved
        assert lines[-1] == "data: [DONE]" and '"type":"error"' not in lines[-3]
        assert _text_of(lines).split() == [f"word{n}" for n in range(WORDS)]
    time.sleep(2)
    asyncio.run(_database_reachable(postgres_url, name, True))
    back = time.monotonic()
    while httpx.get(f"{url_b}/agents/bot/threads/c1").json().get("running") is not False:
        assert time.monotonic() - back < STALE_RUN_SECONDS, "the thread was never freed"
        time.sleep(0.05)
    freed_after = time.monotonic() - back
    history = _history(url_b, "c1")
    assert [(role, status) for role, status, _ in history] == [("user", ""), ("assistant", "complete")]
    assert history[1][2].split() == [f"word{n}" for n in range(WORDS)]
    print(f"\nSTORE-DOWN thread free {freed_after:.2f}s after the store's return")

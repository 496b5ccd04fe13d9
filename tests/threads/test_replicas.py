"""Two ``chatgate serve`` replicas, one Redis, one PostgreSQL: a run started on one is followed,
resumed and stopped on the other, and a producer killed mid-run ends its followers' streams properly."""

from __future__ import annotations

import asyncio
import json
import secrets
import threading
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.conftest import ChatgateProcess, run_node_client
from tests.store.conftest import _create_database

LEASE = 1.5
_TEXT = " ".join(f"word{n}" for n in range(40))


@pytest.fixture
def replicas(chatgate_process: ChatgateProcess, redis_url: str, postgres_url: str, tmp_path: Path) -> Any:
    """Two replicas of one config; returns ``((url_a, process_a), (url_b, process_b))``."""
    name = f"r_{secrets.token_hex(6)}"
    asyncio.run(_create_database(postgres_url, name))
    store = postgres_url.rsplit("/", 1)[0] + f"/{name}"
    config = tmp_path / "chatgate.toml"
    config.write_text(
        f'[server]\nredis_url = "{redis_url}"\nrun_log_lease_seconds = {LEASE}\n\n'
        f'[store]\nurl = "{store}"\n\n'
        '[agents.bot]\nmodel = "builtin:echo"\nconversations = "server"\nmodel_settings = { delay = 0.1 }\n'
    )
    return chatgate_process("--config", str(config)), chatgate_process("--config", str(config))


def _start_usechat(url: str, chat_id: str) -> tuple[list[str], threading.Thread]:
    message = {"id": f"u-{chat_id}", "role": "user", "parts": [{"type": "text", "text": _TEXT}]}
    return _read(url, "/agents/bot/chat", "POST", {"id": chat_id, "message": message})


def _read(url: str, path: str, method: str = "GET", body: Any = None) -> tuple[list[str], threading.Thread]:
    lines: list[str] = []

    def read() -> None:
        try:
            with httpx.stream(method, f"{url}{path}", json=body, timeout=30) as response:
                lines.extend(line for line in response.iter_lines() if line)
        except httpx.HTTPError as error:
            lines.append(f"(connection lost: {error!r})")

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    return lines, reader


def _wait_for(lines: list[str], text: str, count: int = 1) -> None:
    deadline = time.monotonic() + 15
    while sum(text in line for line in lines) < count:
        assert time.monotonic() < deadline, lines
        time.sleep(0.02)


def test_a_run_started_on_one_replica_resumes_on_the_other_with_identical_chunks(replicas: Any) -> None:
    (url_a, _), (url_b, _) = replicas
    started, starter = _start_usechat(url_a, "c1")
    _wait_for(started, '"text-delta"', 3)
    on_b, reader_b = _read(url_b, "/agents/bot/chat/c1/stream")
    on_a, reader_a = _read(url_a, "/agents/bot/chat/c1/stream")
    for reader in (starter, reader_a, reader_b):
        reader.join(timeout=30)
    assert on_b[-1] == "data: [DONE]" and '"type":"finish"' in on_b[-2]
    assert on_b == on_a == started
    stored = httpx.get(f"{url_b}/agents/bot/threads/c1/messages").json()["messages"]
    assert stored[1]["parts"][-1]["text"].endswith("word39")
    assert httpx.get(f"{url_b}/agents/bot/chat/c1/stream").status_code == 204


def test_ai_chat_class_resumes_on_the_other_replica(replicas: Any) -> None:
    (url_a, _), (url_b, _) = replicas
    started, starter = _start_usechat(url_a, "c1")
    _wait_for(started, '"text-delta"')
    request = {
        "url": f"{url_b}/agents/bot/chat",
        "version": 6,
        "chatId": "c1",
        "steps": [{"resume": True}],
        "messagesUrl": f"{url_b}/agents/bot/threads/c1/messages",
    }
    resumed = run_node_client("vercel_ai_thread.mjs", request)
    starter.join(timeout=30)
    text = "".join(part.get("text", "") for part in resumed["messages"][-1]["parts"] if part["type"] == "text")
    assert text.endswith("word39") and text.count("word0 ") == 1


def test_ag_ui_reconnects_on_the_other_replica(replicas: Any) -> None:
    (url_a, _), (url_b, _) = replicas
    user = {"id": "u1", "role": "user", "content": _TEXT}
    body = {"threadId": "t1", "runId": "r1", "messages": [user], "tools": [], "context": []}
    started, starter = _read(url_a, "/agents/bot/ag-ui", "POST", body)
    _wait_for(started, "TEXT_MESSAGE_CONTENT")
    result = run_node_client(
        "ag_ui_run.mjs", {"url": f"{url_b}/agents/bot/ag-ui", "input": {"threadId": "t1", "messages": [user]}}
    )
    starter.join(timeout=30)
    events = result["events"]
    assert events[1]["type"] == "MESSAGES_SNAPSHOT"  # the thread before the run, for a client that kept a part
    assert [json.loads(line[6:]) for line in started] == [events[0], *events[2:]]
    assert result["messages"][1]["content"].endswith("word39")


def test_a_stop_on_the_other_replica_ends_the_run(replicas: Any) -> None:
    (url_a, _), (url_b, _) = replicas
    started, starter = _start_usechat(url_a, "c1")
    _wait_for(started, '"text-delta"')
    following, follower = _read(url_b, "/agents/bot/chat/c1/stream")
    _wait_for(following, '"text-delta"')
    stopped_at = time.monotonic()
    assert httpx.post(f"{url_b}/agents/bot/threads/c1/stop").json() == {"stopped": True}
    starter.join(timeout=10)
    follower.join(timeout=10)
    assert time.monotonic() - stopped_at < LEASE + 1.0  # the producer reads stop flags with its lease renewals
    for lines in (started, following):
        assert lines[-1] == "data: [DONE]" and lines[-2] == 'data: {"type":"abort"}'  # as the AI SDK ends a stop
        assert not any('"type":"error"' in line for line in lines)
    answer = httpx.get(f"{url_b}/agents/bot/threads/c1/messages").json()["messages"][1]
    assert answer["metadata"]["chatgate"]["status"] == "partial"
    assert httpx.get(f"{url_b}/agents/bot/chat/c1/stream").status_code == 204


def test_a_producer_killed_mid_run_ends_its_followers_within_the_lease(replicas: Any) -> None:
    (url_a, process_a), (url_b, _) = replicas
    started, _starter = _start_usechat(url_a, "c1")
    _wait_for(started, '"text-delta"')
    following, follower = _read(url_b, "/agents/bot/chat/c1/stream")
    _wait_for(following, '"text-delta"', 3)
    time.sleep(1.2)  # past the first checkpoint
    process_a.kill()  # SIGKILL: no ending, no lease release
    killed_at = time.monotonic()
    follower.join(timeout=LEASE + 5)
    assert not follower.is_alive()
    assert time.monotonic() - killed_at < LEASE + 2.0
    assert '"type":"error"' in following[-3] and '"type":"finish"' in following[-2]
    assert following[-1] == "data: [DONE]"
    # What was checkpointed before the kill is stored, as partial.
    answer = httpx.get(f"{url_b}/agents/bot/threads/c1/messages").json()["messages"][1]
    assert answer["metadata"]["chatgate"]["status"] == "partial" and answer["parts"][-1]["text"]

"""Replays add nothing (issue 32): a settled approval, denial, tool result or user message sent again never
reaches the model, and duplicates sent at once make exactly one run.

Per replay kind x protocol x store (SQLite, PostgreSQL, two replicas on one PostgreSQL and one Redis),
counting what actually ran: the model calls the fake upstream received over HTTP, the tool's executions
(lines in its file) and the rows in the store. The servers are shared by the module; each test has a
thread of its own.

The issue's own reproduction on the real model server is tests/realmodel/test_replays.py (an approved
server tool, the same approval sent again in both protocols: no new llama-server request, rows ``user,
tool call, tool result, assistant``; then a next user turn on Gemma's strict chat template, answered).
"""

from __future__ import annotations

import asyncio
import secrets
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.conftest import run_node_client
from tests.e2e.approval_flows import executions
from tests.store.conftest import _create_database
from tests.threads.replay_flows import (
    KINDS,
    PROTOCOLS,
    Flow,
    Stack,
    ThreadModel,
    answer_text,
    events_of,
    running_model,
    start_stack,
)

DUPLICATES = 16
HYDRATE = ["RUN_STARTED", "MESSAGES_SNAPSHOT", "RUN_FINISHED"]


@pytest.fixture(scope="module")
def model() -> Iterator[ThreadModel]:
    """The fake model every stack of this module calls."""
    with running_model() as fake:
        yield fake


@pytest.fixture(scope="module", params=["sqlite", "postgres", "replicas"])
def stack(
    request: pytest.FixtureRequest, model: ThreadModel, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Stack]:
    """chatgate on SQLite, on PostgreSQL, or as two replicas sharing one PostgreSQL and one Redis."""
    name: str = request.param
    if name == "sqlite":
        store_url = f"sqlite:///{tmp_path_factory.mktemp('replays') / 'threads.db'}"
    else:
        server_url: str = request.getfixturevalue("postgres_url")
        database = f"r_{secrets.token_hex(6)}"
        asyncio.run(_create_database(server_url, database))
        store_url = server_url.rsplit("/", 1)[0] + f"/{database}"
    redis_url: str | None = request.getfixturevalue("redis_url") if name == "replicas" else None
    running = start_stack(name, store_url, model.url, redis_url)
    yield running
    for server in running.servers:
        server.stop()


def _flow(kind: str, protocol: str, stack: Stack, tmp_path: Path, mode: str) -> Flow:
    return Flow(kind, protocol, f"{mode}-{kind}-{protocol}-{stack.name}-{secrets.token_hex(3)}", tmp_path / "runs.log")


async def _counts(flow: Flow, stack: Stack, model: ThreadModel) -> tuple[int, int, list[str]]:
    return model.calls(flow.thread), executions(flow.log), await stack.rows(flow.thread)


def _expected(flow: Flow) -> tuple[int, int, list[str]]:
    return flow.prepare_calls + flow.model_calls, flow.executions, flow.rows


@pytest.mark.parametrize("protocol", PROTOCOLS)
@pytest.mark.parametrize("kind", KINDS)
async def test_a_settled_request_sent_again_adds_nothing(
    stack: Stack, model: ThreadModel, kind: str, protocol: str, tmp_path: Path
) -> None:
    flow = _flow(kind, protocol, stack, tmp_path, "again")
    async with httpx.AsyncClient(timeout=30) as client:
        await flow.prepare(client, stack.url(0))
        answered = await client.post(stack.url(0) + flow.path, json=flow.request())
        assert answered.status_code == 200 and answer_text(events_of(answered.content)).startswith("answer")
        assert await _counts(flow, stack, model) == _expected(flow)
        replay = await client.post(stack.url(1) + flow.path, json=flow.request())  # the other replica, if two
    if protocol == "chat":
        assert replay.status_code == 422 and replay.json()["error"]["code"] == "nothing_to_answer"
    else:
        assert [event["type"] for event in events_of(replay.content)] == HYDRATE
    assert await _counts(flow, stack, model) == _expected(flow)  # no model call, no tool run, no row


async def _burst(client: httpx.AsyncClient, stack: Stack, flow: Flow, model: ThreadModel) -> list[tuple[int, bytes]]:
    """Send the request ``DUPLICATES`` times at once while the model holds its reply; their answers."""
    arrived = 0
    everyone_in = asyncio.Event()
    go_on = asyncio.Event()

    async def send(index: int) -> tuple[int, bytes]:
        nonlocal arrived
        async with client.stream("POST", stack.url(index) + flow.path, json=flow.request()) as response:
            arrived += 1
            if arrived == DUPLICATES:
                everyone_in.set()
            await go_on.wait()
            return response.status_code, await response.aread()

    model.hold()
    try:
        sending = [asyncio.create_task(send(index)) for index in range(DUPLICATES)]
        await asyncio.wait_for(everyone_in.wait(), 60)  # every duplicate has its answer's head: the run is going
    finally:
        model.release()
    go_on.set()
    return await asyncio.gather(*sending)


@pytest.mark.parametrize("protocol", PROTOCOLS)
@pytest.mark.parametrize("kind", KINDS)
async def test_duplicates_sent_at_once_make_one_run_and_all_follow_it(
    stack: Stack, model: ThreadModel, kind: str, protocol: str, tmp_path: Path
) -> None:
    flow = _flow(kind, protocol, stack, tmp_path, "burst")
    limits = httpx.Limits(max_connections=DUPLICATES * 2)
    async with httpx.AsyncClient(timeout=60, limits=limits) as client:
        await flow.prepare(client, stack.url(0))
        answers = await _burst(client, stack, flow, model)
    assert [status for status, _ in answers] == [200] * DUPLICATES, answers[0][1][:300]
    texts = {answer_text(events_of(body)) for _, body in answers}
    assert len(texts) == 1 and texts.pop().startswith("answer")  # every duplicate followed the one run
    if protocol == "chat":
        assert len({body for _, body in answers}) == 1  # the same bytes, from the one run's log
    else:
        assert all(events_of(body)[-1]["type"] == "RUN_FINISHED" for _, body in answers)
    assert await _counts(flow, stack, model) == _expected(flow)


@pytest.mark.parametrize("protocol", PROTOCOLS)
async def test_a_settled_approval_beside_a_new_message_answers_only_the_message(
    stack: Stack, model: ThreadModel, protocol: str, tmp_path: Path
) -> None:
    flow = _flow("approval", protocol, stack, tmp_path, "next")
    async with httpx.AsyncClient(timeout=30) as client:
        await flow.prepare(client, stack.url(0))
        assert (await client.post(stack.url(0) + flow.path, json=flow.request())).status_code == 200
        settled = flow.request()  # still carrying the approval, as a client that missed the answer does
        body = {**settled, "messages": [*settled["messages"], flow.user("and now?", "u2")]}
        response = await client.post(stack.url(1) + flow.path, json=body)
    assert response.status_code == 200 and answer_text(events_of(response.content)).startswith("answer")
    calls, runs, rows = await _counts(flow, stack, model)
    assert (calls, runs, rows) == (3, 1, [*flow.rows, "user", "assistant"])


async def test_a_resume_sent_again_by_http_agent_shows_it_the_outcome(
    stack: Stack, model: ThreadModel, tmp_path: Path
) -> None:
    flow = _flow("approval", "ag-ui", stack, tmp_path, "client")
    async with httpx.AsyncClient(timeout=30) as client:
        await flow.prepare(client, stack.url(0))
        assert (await client.post(stack.url(0) + flow.path, json=flow.request())).status_code == 200
    before = await _counts(flow, stack, model)
    body = flow.request()
    replay = run_node_client("ag_ui_run.mjs", {"url": stack.url(1) + flow.path, "input": body})
    assert [event["type"] for event in replay["events"]] == HYDRATE  # HttpAgent verified the run
    roles = [message["role"] for message in replay["messages"]]
    assert roles == ["user", "assistant", "tool", "assistant"]  # the tool's result and the answer it missed
    assert replay["messages"][-1]["content"].startswith("answer")
    assert await _counts(flow, stack, model) == before

"""Recovering a dead run from its journal, on a real Redis and a real store (SQLite and PostgreSQL).

Each replica here is its own ``RedisRunLog`` and its own store connection: a producer "dies" by
dropping its run log without ending the run (its pump stops, so its lease lapses), as kill -9 does.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from contextlib import AsyncExitStack
from functools import partial
from pathlib import Path
from typing import Any

import pytest
import redis.asyncio as redis

from chatgate.events import RunEvent, RunFinished, StepFinished, StepStarted, TextDelta, TextEnd, TextStart
from chatgate.history import AssistantMessage, TextPart, UserMessage
from chatgate.ids import new_id
from chatgate.runlog import RedisRunLog, RunLogLimits
from chatgate.store import NewMessage, ThreadInfo, ThreadStore, open_store
from chatgate.threads.follow import follow_run, run_log_id
from chatgate.threads.recovery import RunRecovery, sweep_once
from chatgate.threads.run import ThreadRun, TurnRecorder

LIMITS = RunLogLimits(lease=0.6, ttl=10.0, flush_interval=0.01)
PROTOCOL = "vercel-ai"
ENDING = b"data: lost\n\n"


class Replica:
    """One replica's parts: its run log, its store connection and its recovery."""

    def __init__(self, run_log: RedisRunLog, store: ThreadStore) -> None:
        self.run_log = run_log
        self.store = store
        self.recovery = RunRecovery(store, run_log, ["ag-ui", PROTOCOL])


@pytest.fixture
async def replicas(redis_url: str, store_url: str, tmp_path: Path) -> AsyncIterator[Callable[[], Any]]:
    """Makes replicas; all are closed after the test."""
    async with AsyncExitStack() as stack:

        async def replica() -> Replica:
            client = redis.from_url(redis_url)
            stack.push_async_callback(client.aclose)
            run_log = RedisRunLog(client, LIMITS)
            stack.push_async_callback(run_log.aclose)
            store = await open_store(store_url, tmp_path)
            stack.push_async_callback(store.close)
            return Replica(run_log, store)

        yield replica


async def _answer(words: int, pause: float, gate: asyncio.Event | None = None) -> AsyncIterator[RunEvent]:
    yield StepStarted("model")
    yield TextStart("t1")
    for n in range(words):
        if gate is not None and n == words // 2:
            await gate.wait()
        yield TextDelta("t1", f"w{n} ")
        await asyncio.sleep(pause)
    yield TextEnd("t1")
    yield StepFinished("model", "stop")
    yield RunFinished("stop")


async def _encode(events: AsyncIterator[RunEvent]) -> AsyncIterator[bytes]:
    async for event in events:
        text = event.delta if isinstance(event, TextDelta) else type(event).__name__
        yield f"data: {text}\n\n".encode()


async def _begin(store: ThreadStore) -> tuple[ThreadInfo, str]:
    run_id = new_id("run")
    user = NewMessage(UserMessage((TextPart("hi"),), id=new_id("msg")))
    thread = await store.begin_run("", "bot", new_id("c"), run_id, revision=0, append=[user])
    return thread, run_id


def _start(replica: Replica, thread: ThreadInfo, run_id: str, events: AsyncIterator[RunEvent]) -> Any:
    async def started() -> ThreadRun:
        writer = await replica.run_log.create(run_log_id(run_id, PROTOCOL))
        return ThreadRun(
            replica.store,
            thread,
            run_id,
            events,
            TurnRecorder("m-first"),
            writer,
            encode=_encode,
            interrupted=lambda message, code: ENDING,
            finish_on_disconnect=True,
        )

    return started()


async def _read(frames: AsyncIterator[bytes]) -> bytes:
    return b"".join([frame async for frame in frames])


def _words(frames: bytes) -> list[str]:
    return [line[6:].strip() for line in frames.decode().split("\n") if line.startswith("data: w")]


async def test_two_followers_racing_to_recover_a_dead_run_store_its_turn_once(replicas: Callable[[], Any]) -> None:
    producer, b, c = await replicas(), await replicas(), await replicas()
    thread, run_id = await _begin(producer.store)
    gate = asyncio.Event()  # never set: the answer stops half way, as if the process froze there
    run = await _start(producer, thread, run_id, _answer(20, 0.005, gate))
    log_id = run_log_id(run_id, PROTOCOL)
    followers = [
        asyncio.create_task(
            _read(follow_run(r.run_log.follow(log_id), lambda m, c: ENDING, lost=partial(r.recovery.recover, thread)))
        )
        for r in (b, c)
    ]
    await asyncio.sleep(0.3)  # the first half is flushed to Redis
    await producer.run_log.aclose()  # the producer dies: its pump stops, no ending, its lease lapses
    received = await asyncio.wait_for(asyncio.gather(*followers), 10)
    for frames in received:
        assert frames.endswith(ENDING)
        assert _words(frames) == [f"w{n}" for n in range(10)]
    assert b.recovery.recovered + c.recovery.recovered == 1  # both tried, the store's update chose one
    stored = await b.store.messages(thread)
    assert [(type(m.message), m.status) for m in stored] == [(UserMessage, "complete"), (AssistantMessage, "partial")]
    assert stored[1].message.id == "m-first"  # the id the stream gave it
    assert stored[1].message.text == "".join(f"w{n} " for n in range(10))
    assert (await b.store.get_thread("", "bot", thread.id)).active_run is None  # type: ignore[union-attr]
    run.task.cancel()
    await asyncio.gather(run.task, return_exceptions=True)


class Refusing:
    """The real store, but every ``finish_run`` refused while ``down`` (a store outage at a run's end)."""

    def __init__(self, store: ThreadStore) -> None:
        self.store = store
        self.down = True
        self.refused = 0

    def __getattr__(self, name: str) -> Any:
        return getattr(self.store, name)

    async def finish_run(self, *args: Any, **kwargs: Any) -> bool:
        if self.down:
            self.refused += 1
            raise ConnectionError("the store is down")
        return await self.store.finish_run(*args, **kwargs)


async def _until_recovered(replica: Replica, thread: ThreadInfo) -> None:
    for _ in range(200):
        if await replica.recovery.recover(thread):
            return
        await asyncio.sleep(0.05)
    raise AssertionError("the run was never recovered")


async def test_a_turn_the_store_refused_at_the_end_is_saved_when_it_returns(replicas: Callable[[], Any]) -> None:
    producer, other = await replicas(), await replicas()
    refusing = Refusing(producer.store)
    producer.store = refusing
    thread, run_id = await _begin(other.store)
    run = await _start(producer, thread, run_id, _answer(10, 0.005))
    frames = await asyncio.wait_for(
        _read(follow_run(other.run_log.follow(run_log_id(run_id, PROTOCOL)), ENDING_OF)), 10
    )
    assert _words(frames) == [f"w{n}" for n in range(10)] and frames.endswith(b"data: RunFinished\n\n")
    await asyncio.sleep(LIMITS.lease * 2)  # past a lease: the producer holds it while it retries
    assert not await other.recovery.recover(thread)
    assert [m.status for m in await other.store.messages(thread)] == ["complete"]  # the user's turn only
    refusing.down = False
    await asyncio.wait_for(run.task, 5)
    stored = await other.store.messages(thread)
    assert [(type(m.message), m.status) for m in stored] == [(UserMessage, "complete"), (AssistantMessage, "complete")]
    assert stored[1].message.text == "".join(f"w{n} " for n in range(10))
    assert refusing.refused >= 3  # the save at the end, then retries
    assert other.recovery.recovered == 0


async def test_a_producer_that_dies_with_its_turn_unsaved_is_recovered_complete(replicas: Callable[[], Any]) -> None:
    producer, other = await replicas(), await replicas()
    producer.store = Refusing(producer.store)  # never returns before the producer dies
    thread, run_id = await _begin(other.store)
    run = await _start(producer, thread, run_id, _answer(10, 0.005))
    await asyncio.wait_for(_read(other.run_log.follow(run_log_id(run_id, PROTOCOL))), 10)
    run.task.cancel()  # it dies while retrying: its lease lapses
    await asyncio.gather(run.task, return_exceptions=True)
    await producer.run_log.aclose()
    await _until_recovered(other, thread)
    stored = await other.store.messages(thread)
    assert [(type(m.message), m.status) for m in stored] == [(UserMessage, "complete"), (AssistantMessage, "complete")]
    assert stored[1].message.text == "".join(f"w{n} " for n in range(10))
    assert other.recovery.recovered == 1


def ENDING_OF(message: str, code: str) -> bytes:
    return f"data: {code}\n\n".encode()


async def test_the_sweep_recovers_a_dead_run_nobody_asked_about(replicas: Callable[[], Any]) -> None:
    producer, other = await replicas(), await replicas()
    thread, run_id = await _begin(other.store)
    alive, alive_run = await _begin(other.store)
    gate = asyncio.Event()
    run = await _start(producer, thread, run_id, _answer(20, 0.005, gate))
    live = await _start(other, alive, alive_run, _answer(20, 0.005, gate))
    await asyncio.sleep(0.3)
    await producer.run_log.aclose()  # the producer dies
    await asyncio.sleep(LIMITS.lease + 0.2)
    assert await sweep_once(other.store, other.recovery) == 0  # heartbeats still fresh: nobody is asked
    # Asked about every held thread: the dead run only is freed; the live one's lease holds.
    assert await sweep_once(other.store, other.recovery, stalled_for=0) == 1
    stored = await other.store.messages(thread)
    assert [m.status for m in stored] == ["complete", "partial"] and stored[1].message.text == "".join(
        f"w{n} " for n in range(10)
    )
    assert (await other.store.get_thread("", "bot", alive.id)).active_run == alive_run  # type: ignore[union-attr]
    for task in (run.task, live.task):
        task.cancel()
    await asyncio.gather(run.task, live.task, return_exceptions=True)

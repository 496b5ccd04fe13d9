"""The Redis run log on a real redis-server: two replicas, a producer's death, stop from afar."""

import asyncio
import time
from collections.abc import AsyncIterator
from contextlib import ExitStack

import pytest
import redis.asyncio as redis

from chatgate.ids import new_id
from chatgate.runlog import ProducerLost, RedisRunLog, ReplayUnavailable, RunLogLimits
from chatgate.threads.follow import follow_run
from tests.servers import running_redis

LIMITS = RunLogLimits(lease=0.6, ttl=5.0, flush_interval=0.01)


@pytest.fixture
async def replicas(redis_url: str) -> AsyncIterator[tuple[RedisRunLog, RedisRunLog]]:
    clients = [redis.from_url(redis_url), redis.from_url(redis_url)]
    logs = (RedisRunLog(clients[0], LIMITS), RedisRunLog(clients[1], LIMITS))
    yield logs
    for log, client in zip(logs, clients, strict=True):
        await log.aclose()
        await client.aclose()


async def _read_all(log: RedisRunLog, run_id: str) -> bytes:
    return b"".join([chunk async for chunk in log.follow(run_id)])


async def test_a_run_started_on_one_replica_reads_identically_on_the_other(
    replicas: tuple[RedisRunLog, RedisRunLog],
) -> None:
    a, b = replicas
    run_id = new_id("run")
    writer = await a.create(run_id)
    writer.write(b"data: 1\n\n")
    remote = asyncio.create_task(_read_all(b, run_id))
    local = asyncio.create_task(_read_all(a, run_id))
    for index in range(2, 40):
        writer.write(b"data: %d\n\n" % index)
        await asyncio.sleep(0.002)
    await writer.close("finished")
    expected = b"".join(b"data: %d\n\n" % index for index in range(1, 40))
    assert await asyncio.wait_for(remote, 5) == expected
    assert await asyncio.wait_for(local, 5) == expected
    assert await _read_all(b, run_id) == expected  # a late follower replays the whole run


async def test_runs_streaming_together_each_read_their_own_frames_on_the_other_replica(
    replicas: tuple[RedisRunLog, RedisRunLog],
) -> None:
    a, b = replicas  # one flush carries all three runs' frames
    runs = [new_id("run") for _ in range(3)]
    writers = [await a.create(run_id) for run_id in runs]
    followers = [asyncio.create_task(_read_all(b, run_id)) for run_id in runs]
    for index in range(30):
        for number, writer in enumerate(writers):
            writer.write(b"data: %d.%d\n\n" % (number, index))
        await asyncio.sleep(0.003)
    for writer in writers:
        await writer.close("finished")
    for number, follower in enumerate(followers):
        assert await asyncio.wait_for(follower, 5) == b"".join(b"data: %d.%d\n\n" % (number, i) for i in range(30))


async def test_writes_are_batched_not_one_entry_per_frame(
    replicas: tuple[RedisRunLog, RedisRunLog], redis_url: str
) -> None:
    a, _ = replicas
    run_id = new_id("run")
    writer = await a.create(run_id)
    for _ in range(500):
        writer.write(b"data: x\n\n")
    await writer.close("finished")
    client = redis.from_url(redis_url)
    try:
        entries = await client.xlen(f"chatgate:run:{run_id}:log")
    finally:
        await client.aclose()
    assert entries <= 5  # start, one or two batches, end


async def test_a_follower_ends_within_the_lease_when_the_producer_dies(
    replicas: tuple[RedisRunLog, RedisRunLog],
) -> None:
    a, b = replicas
    run_id = new_id("run")
    writer = await a.create(run_id)
    writer.write(b"data: partial\n\n")
    await asyncio.sleep(0.05)
    a._pump_task.cancel()  # type: ignore[union-attr]  # the producer's process dies: no ending, no renewals
    chunks: list[bytes] = []
    started = time.monotonic()
    with pytest.raises(ProducerLost):
        async for chunk in b.follow(run_id):
            chunks.append(chunk)
    assert chunks == [b"data: partial\n\n"]
    assert time.monotonic() - started < LIMITS.lease + 1.5


async def test_stop_from_the_other_replica_reaches_the_producer(replicas: tuple[RedisRunLog, RedisRunLog]) -> None:
    a, b = replicas
    run_id = new_id("run")
    writer = await a.create(run_id)
    waiting = asyncio.create_task(writer.stop_requested())
    assert await b.request_stop(run_id)
    await asyncio.wait_for(waiting, LIMITS.lease)
    await writer.close("stopped")
    assert not await b.request_stop(run_id)


async def test_an_unknown_run_cannot_be_followed(replicas: tuple[RedisRunLog, RedisRunLog]) -> None:
    _, b = replicas
    with pytest.raises(ReplayUnavailable):
        await _read_all(b, new_id("run"))


async def test_a_run_longer_than_the_bound_cannot_be_replayed(redis_url: str) -> None:
    client = redis.from_url(redis_url)
    producer = RedisRunLog(client, RunLogLimits(max_entries=10, flush_interval=0.001, lease=0.6))
    follower = RedisRunLog(client, RunLogLimits(lease=0.6))
    try:
        run_id = new_id("run")
        writer = await producer.create(run_id)
        for _ in range(300):
            writer.write(b"data: x\n\n")
            await asyncio.sleep(0.002)
        await writer.close("finished")
        with pytest.raises(ReplayUnavailable):
            await _read_all(follower, run_id)
    finally:
        await producer.aclose()
        await follower.aclose()
        await client.aclose()


async def test_a_follower_ends_in_protocol_when_redis_goes_away() -> None:
    ending = b"data: run_log_unavailable\n\n"
    with ExitStack() as stack:
        url = stack.enter_context(running_redis())
        clients = [redis.from_url(url), redis.from_url(url)]
        producer, follower = RedisRunLog(clients[0], LIMITS), RedisRunLog(clients[1], LIMITS)
        run_id = new_id("run")
        writer = await producer.create(run_id)
        writer.write(b"data: 1\n\n")
        frames = follow_run(follower.follow(run_id), lambda message, code: f"data: {code}\n\n".encode())
        assert await asyncio.wait_for(anext(frames), 5) == b"data: 1\n\n"
        stack.close()  # redis-server stops mid-follow
        rest = await asyncio.wait_for(_drain(frames), 10)
        assert rest == [ending]  # an ending in protocol, not an exception
        await producer.aclose()
        for client in clients:
            await client.aclose()


async def _drain(frames: AsyncIterator[bytes]) -> list[bytes]:
    return [frame async for frame in frames]

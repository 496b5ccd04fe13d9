"""The in-process run log: replay then live, several followers, bounds, stop, expiry."""

import asyncio

import pytest

from chatgate.runlog import MemoryRunLog, ReplayUnavailable, RunLogLimits


async def _read_all(log: MemoryRunLog, run_id: str) -> bytes:
    return b"".join([chunk async for chunk in log.follow(run_id)])


async def test_a_follower_gets_the_frames_written_before_and_after_it_joined() -> None:
    log = MemoryRunLog()
    writer = await log.create("run-1")
    writer.write(b"a")
    writer.write(b"b")
    follower = asyncio.create_task(_read_all(log, "run-1"))
    await asyncio.sleep(0)
    writer.write(b"c")
    await asyncio.sleep(0)
    writer.write(b"d")
    await writer.close("finished")
    assert await follower == b"abcd"


async def test_every_follower_reads_the_same_bytes_and_a_late_one_too() -> None:
    log = MemoryRunLog()
    writer = await log.create("run-1")
    followers = [asyncio.create_task(_read_all(log, "run-1")) for _ in range(3)]
    for index in range(50):
        writer.write(b"frame-%d;" % index)
        if index % 7 == 0:
            await asyncio.sleep(0)
    await writer.close("finished")
    results = await asyncio.gather(*followers)
    expected = b"".join(b"frame-%d;" % index for index in range(50))
    assert results == [expected] * 3
    assert await _read_all(log, "run-1") == expected


async def test_an_unknown_run_cannot_be_followed() -> None:
    with pytest.raises(ReplayUnavailable):
        await _read_all(MemoryRunLog(), "nope")


async def test_a_run_longer_than_the_bound_cannot_be_replayed_from_its_start() -> None:
    log = MemoryRunLog(RunLogLimits(max_bytes=100))
    writer = await log.create("run-1")
    for _ in range(30):
        writer.write(b"0123456789")
    with pytest.raises(ReplayUnavailable):
        await _read_all(log, "run-1")


async def test_stop_reaches_the_producer_once_and_not_after_the_end() -> None:
    log = MemoryRunLog()
    writer = await log.create("run-1")
    waiting = asyncio.create_task(writer.stop_requested())
    assert await log.request_stop("run-1")
    await asyncio.wait_for(waiting, 1)
    await writer.close("stopped")
    assert not await log.request_stop("run-1")
    assert not await log.request_stop("unknown")


async def test_a_finished_run_is_dropped_after_the_ttl() -> None:
    log = MemoryRunLog(RunLogLimits(ttl=0.05))
    writer = await log.create("run-1")
    writer.write(b"x")
    await writer.close("finished")
    assert await _read_all(log, "run-1") == b"x"
    await asyncio.sleep(0.1)
    with pytest.raises(ReplayUnavailable):
        await _read_all(log, "run-1")

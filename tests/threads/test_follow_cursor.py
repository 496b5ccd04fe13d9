"""``replay_run(..., seen=N)`` (app/threads/follow.py): a run's stream without the events a client has."""

from __future__ import annotations

import pytest

from chatgate.runlog import MemoryRunLog
from chatgate.threads import replay_run

pytestmark = pytest.mark.asyncio


def _ending(message: str, code: str) -> bytes:
    return f"data: {code}\n\n".encode()


@pytest.mark.parametrize(("seen", "rest"), [(1, b"b c d"), (2, b"c d"), (3, b"d"), (4, b"")])
async def test_the_first_seen_events_are_left_out_whatever_the_frames_hold(seen: int, rest: bytes) -> None:
    log = MemoryRunLog()
    writer = await log.create("run")
    for frame in (b"data: a\n\n", b"data: b\n\ndata: c\n\n", b"data: d\n\n"):  # one frame may hold several
        writer.write(frame)
    await writer.close("finished")
    frames = await replay_run(log, "run", _ending, rejoined=b"data: snapshot\n\n", seen=seen)
    assert frames is not None
    got = b"".join([frame async for frame in frames])
    assert got.replace(b"data: ", b"").replace(b"\n\n", b" ").strip() == rest  # and no snapshot

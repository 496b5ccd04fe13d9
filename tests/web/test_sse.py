import asyncio
import threading
from collections.abc import AsyncGenerator, Iterator

import httpx
import pytest

from chatgate.web.sse import KEEPALIVE_FRAME, EventStreamResponse
from tests.conftest import LiveServer


class SlowStream:
    """Frames with pauses between them; records whether it was closed."""

    def __init__(self, pause: float, frames: int) -> None:
        self.pause = pause
        self.frames = frames
        self.closed = threading.Event()

    async def __call__(self) -> AsyncGenerator[bytes, None]:
        try:
            for index in range(self.frames):
                await asyncio.sleep(self.pause)
                yield f"data: {index}\n\n".encode()
        finally:
            self.closed.set()


@pytest.fixture
def live(request: pytest.FixtureRequest) -> Iterator[tuple[str, SlowStream]]:
    frames, joined = getattr(request, "param", (3, False))
    stream = SlowStream(pause=0.25, frames=frames)

    async def app(scope, receive, send):  # type: ignore[no-untyped-def]
        if scope["type"] == "http":
            response = EventStreamResponse(stream(), {"x-test": "1"}, keepalive=0.1, joined=joined)
            await response(scope, receive, send)

    server = LiveServer(app)
    server.start()
    yield server.url, stream
    server.stop()


@pytest.mark.parametrize("live", [(3, False), (3, True)], indirect=True, ids=["queued", "joined"])
def test_frames_arrive_with_keepalive_comments_in_the_silences(live: tuple[str, SlowStream]) -> None:
    url, _ = live
    response = httpx.get(url)
    assert response.headers["content-type"] == "text/event-stream"
    assert response.headers["x-test"] == "1"
    body = response.content
    assert body.replace(KEEPALIVE_FRAME, b"") == b"data: 0\n\ndata: 1\n\ndata: 2\n\n"
    assert body.count(KEEPALIVE_FRAME) >= 1
    assert b"\r" not in body


@pytest.mark.parametrize("live", [(400, False), (400, True)], indirect=True, ids=["queued", "joined"])  # 100 s
def test_a_client_that_hangs_up_closes_the_stream_at_once(live: tuple[str, SlowStream]) -> None:
    url, stream = live
    with httpx.stream("GET", url) as response:
        next(response.iter_raw())
    assert stream.closed.wait(timeout=stream.frames * stream.pause / 2)  # long before its 100 s end


async def _drive(frames: AsyncGenerator[bytes, None], send_pause: float = 0.0, joined: bool = False) -> list[bytes]:
    """Run a response in process; the bodies of its sends."""
    sent: list[bytes] = []
    disconnected = asyncio.Event()

    async def receive() -> dict[str, str]:
        await disconnected.wait()
        return {"type": "http.disconnect"}

    async def send(message: dict[str, object]) -> None:
        if message["type"] == "http.response.body":
            sent.append(message["body"])  # type: ignore[arg-type]
            await asyncio.sleep(send_pause)

    await EventStreamResponse(frames, {}, joined=joined)({"type": "http"}, receive, send)  # type: ignore[arg-type]
    return sent


async def test_frames_ready_at_once_leave_in_one_send_and_paced_ones_one_by_one() -> None:
    async def burst() -> AsyncGenerator[bytes, None]:
        for index in range(100):
            yield f"data: {index}\n\n".encode()

    async def paced() -> AsyncGenerator[bytes, None]:
        for index in range(3):
            await asyncio.sleep(0.01)
            yield f"data: {index}\n\n".encode()

    sent = await _drive(burst())
    assert b"".join(sent) == b"".join(f"data: {n}\n\n".encode() for n in range(100))
    assert len(sent) == 2  # the frames, then the end of the body
    assert await _drive(paced()) == [b"data: 0\n\n", b"data: 1\n\n", b"data: 2\n\n", b""]


async def test_joined_chunks_are_sent_as_they_come_and_a_failing_source_still_ends_the_body() -> None:
    async def joined() -> AsyncGenerator[bytes, None]:
        yield b"data: 0\n\ndata: 1\n\n"
        yield b"data: 2\n\n"
        raise RuntimeError("the follower broke")

    assert await _drive(joined(), joined=True) == [b"data: 0\n\ndata: 1\n\n", b"data: 2\n\n", b""]


async def test_a_slow_client_holds_the_producer_back() -> None:
    made = 0

    async def endless() -> AsyncGenerator[bytes, None]:
        nonlocal made
        while made < 2000:
            made += 1
            yield b"data: " + b"x" * 1000 + b"\n\n"

    task = asyncio.create_task(_drive(endless(), send_pause=0.05))
    await asyncio.sleep(0.3)
    # Unchecked, all 2,000 would be made at once; held back, about 64 KiB (66 frames) per 50 ms send.
    assert 66 < made < 12 * 66
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task

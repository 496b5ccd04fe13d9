import asyncio
import threading
import time
from collections.abc import AsyncGenerator, Iterator

import httpx
import pytest

from chatgate.sse import KEEPALIVE_FRAME, EventStreamResponse
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
    stream = SlowStream(pause=0.25, frames=getattr(request, "param", 3))

    async def app(scope, receive, send):  # type: ignore[no-untyped-def]
        if scope["type"] == "http":
            await EventStreamResponse(stream(), {"x-test": "1"}, keepalive=0.1)(scope, receive, send)

    server = LiveServer(app)
    server.start()
    yield server.url, stream
    server.stop()


def test_frames_arrive_with_keepalive_comments_in_the_silences(live: tuple[str, SlowStream]) -> None:
    url, _ = live
    response = httpx.get(url)
    assert response.headers["content-type"] == "text/event-stream"
    assert response.headers["x-test"] == "1"
    body = response.content
    assert body.replace(KEEPALIVE_FRAME, b"") == b"data: 0\n\ndata: 1\n\ndata: 2\n\n"
    assert body.count(KEEPALIVE_FRAME) >= 1
    assert b"\r" not in body


@pytest.mark.parametrize("live", [400], indirect=True)  # 100 s if nobody hung up
def test_a_client_that_hangs_up_closes_the_stream_at_once(live: tuple[str, SlowStream]) -> None:
    url, stream = live
    with httpx.stream("GET", url) as response:
        next(response.iter_raw())
    hung_up = time.monotonic()
    assert stream.closed.wait(timeout=5)
    assert time.monotonic() - hung_up < 1.0

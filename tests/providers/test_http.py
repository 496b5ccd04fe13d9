"""The shared upstream plumbing: retries, timeouts, broken streams, closing, and the body readers."""

import asyncio
import gzip
import logging
import socket
from collections.abc import AsyncIterator
from itertools import pairwise
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from chatgate.errors import ProviderError
from chatgate.events import ModelFinished, RunEvent, RunFailed, TextDelta
from chatgate.history import TextPart, UserMessage
from chatgate.providers.base import ModelRequest
from chatgate.providers.bodies import ndjson_objects, sse_messages
from chatgate.run.runner import run_agent
from chatgate.run_input import RunInput
from tests.providers.fakes import FakeUpstream, Reply, openai_chunk, text_reply
from tests.providers.support import agent_on, collect, provider, stream_once

HALF_THE_REPLY = 50.0  # seconds: a slow reply below lasts 100 s; closing it is what ends the wait, on any machine

HELLO = (UserMessage((TextPart("Hello"),)),)
DONE = b"data: [DONE]\n\n"
OK = Reply([openai_chunk({"content": "ok"}), openai_chunk({}, "stop"), DONE])


def refused(status: int, **headers: str) -> Reply:
    return Reply(
        [b'{"error": {"message": "nope"}}'], status=status, headers={"content-type": "application/json", **headers}
    )


def timeouts(first_token: float, idle: float) -> dict[str, float]:
    return {"connect": 2.0, "first_token": first_token, "idle": idle}


async def test_a_429_then_success_is_retried_and_streams_once() -> None:
    async with FakeUpstream(refused(429, **{"retry-after": "0"}), OK) as fake:
        events = await stream_once("openai", fake.url, HELLO, retries=2)
    assert len(fake.requests) == 2
    assert [e.delta for e in events if isinstance(e, TextDelta)] == ["ok"]


async def test_503_is_retried_until_the_retries_run_out() -> None:
    async with FakeUpstream(refused(503)) as fake:
        events = await run_events_with("openai", fake.url, retries=1)
    assert len(fake.requests) == 2
    assert events[-1] == RunFailed("The model provider is overloaded; try again later.", code="model_error")


async def test_a_400_is_not_retried_and_its_body_stays_out_of_the_message() -> None:
    async with FakeUpstream(refused(400)) as fake:
        events = await run_events_with("openai", fake.url, retries=3)
    assert len(fake.requests) == 1
    assert events[-1] == RunFailed("The model provider rejected the request.", code="model_error")


async def test_a_500_is_a_provider_failure() -> None:
    async with FakeUpstream(refused(500)) as fake:
        events = await run_events_with("openai", fake.url, retries=3)
    assert len(fake.requests) == 1
    assert events[-1] == RunFailed("The model provider failed.", code="model_error")


async def test_a_refused_connection_is_retried_then_reported() -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        url = f"http://127.0.0.1:{sock.getsockname()[1]}"  # bound, never listening: connections are refused
        async with provider("openai", url, retries=1) as model:
            with pytest.raises(ProviderError) as caught:
                await collect(model.stream(ModelRequest("m", HELLO)))
    assert caught.value.public_message == "The model provider could not be reached."
    assert caught.value.retryable


async def test_the_provider_is_named_once_in_every_log_line_of_an_upstream_failure(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        url = f"http://127.0.0.1:{sock.getsockname()[1]}"
        async with provider("openai", url, retries=1) as model:
            with caplog.at_level(logging.WARNING):
                await collect(run_agent(agent_on(model), RunInput(HELLO)))
    lines = [record.getMessage() for record in caplog.records]
    assert any("retrying" in line and "up: cannot connect" in line for line in lines), lines
    assert any("model call failed: up: cannot connect" in line for line in lines), lines
    assert not any("up: up:" in line for line in lines), lines


async def test_a_failure_after_the_first_token_is_never_retried() -> None:
    async with FakeUpstream(Reply([openai_chunk({"content": "Hel"})], ending="cut"), OK) as fake:
        events = await run_events_with("openai", fake.url, retries=3)
    assert len(fake.requests) == 1
    assert [e.delta for e in events if isinstance(e, TextDelta)] == ["Hel"]
    assert events[-1] == RunFailed("The model stream was interrupted.", code="model_error", interrupted=True)


async def test_an_upstream_silent_before_its_first_token_times_out() -> None:
    async with FakeUpstream(Reply([], ending="silent")) as fake:
        events = await run_events_with("openai", fake.url, timeouts=timeouts(first_token=0.3, idle=5))
    assert events[-1] == RunFailed("The model took too long to respond.", code="model_error")


async def test_an_upstream_silent_past_its_idle_timeout_mid_stream_fails_and_is_closed() -> None:
    async with FakeUpstream(Reply([openai_chunk({"content": "Hel"})], ending="silent")) as fake:
        events = await run_events_with("openai", fake.url, timeouts=timeouts(first_token=5, idle=0.3))
        await fake.wait_closed(timeout=2)
    assert [e.delta for e in events if isinstance(e, TextDelta)] == ["Hel"]
    assert events[-1] == RunFailed("The model took too long to respond.", code="model_error")


async def test_a_slow_first_token_within_first_token_is_fine_even_past_idle() -> None:
    reply = Reply([0.6, openai_chunk({"content": "late"}), openai_chunk({}, "stop"), DONE])
    async with FakeUpstream(reply) as fake:
        events = await stream_once("openai", fake.url, HELLO, timeouts=timeouts(first_token=5, idle=0.2))
    assert events[-1] == ModelFinished("stop")


async def test_a_slow_consumer_is_not_mistaken_for_an_idle_upstream() -> None:
    reply = Reply([openai_chunk({"content": "a"}), openai_chunk({"content": "b"}), openai_chunk({}, "stop"), DONE])
    async with FakeUpstream(reply) as fake, provider("openai", fake.url, timeouts=timeouts(5, idle=0.2)) as model:
        deltas = []
        async for event in model.stream(ModelRequest("m", HELLO)):
            if isinstance(event, TextDelta):
                deltas.append(event.delta)
            await asyncio.sleep(0.3)  # longer than idle, on our side
    assert deltas == ["a", "b"]


async def test_closing_the_event_stream_closes_the_upstream_connection_at_once() -> None:
    slow = Reply([openai_chunk({"content": "tick"}), *[0.1, openai_chunk({"content": "tick"})] * 1000])
    async with FakeUpstream(slow) as fake, provider("openai", fake.url) as model:
        stream = model.stream(ModelRequest("m", HELLO))
        await anext(stream)
        await stream.aclose()  # type: ignore[attr-defined]
        await fake.wait_closed(timeout=HALF_THE_REPLY)


async def test_cancelling_the_consuming_task_closes_the_upstream_connection() -> None:
    slow = Reply([openai_chunk({"content": "tick"}), *[0.1, openai_chunk({"content": "tick"})] * 1000])
    async with FakeUpstream(slow) as fake, provider("openai", fake.url) as model:
        first = asyncio.Event()

        async def consume() -> None:
            async for _ in model.stream(ModelRequest("m", HELLO)):
                first.set()

        task = asyncio.create_task(consume())
        await first.wait()
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        await fake.wait_closed(timeout=HALF_THE_REPLY)


async def test_the_shared_client_keeps_its_connection_alive_between_calls() -> None:
    async with FakeUpstream(OK) as fake, provider("openai", fake.url) as model:
        for _ in range(3):
            await collect(model.stream(ModelRequest("m", HELLO)))
    assert (len(fake.requests), fake.connections) == (3, 1)


async def test_a_cookie_an_upstream_sets_is_never_sent_with_a_later_request() -> None:
    # The client is shared by every user's requests: a jar would hand one answer's cookie to all.
    with_cookie = Reply(OK.body, headers={"content-type": "text/event-stream", "set-cookie": "__cf_bm=abc; Path=/"})
    async with FakeUpstream(with_cookie, OK) as fake, provider("openai", fake.url) as model:
        for _ in range(2):
            await collect(model.stream(ModelRequest("m", HELLO)))
    assert [request.headers.get("cookie") for request in fake.requests] == [None, None]


@pytest.mark.parametrize("kind", ["openai", "anthropic", "ollama"])
async def test_every_request_is_sent_as_json_by_chatgate(kind: str) -> None:
    async with FakeUpstream(text_reply(kind, "ok")) as fake:
        await stream_once(kind, fake.url, HELLO)
    headers = fake.requests[0].headers
    assert headers["content-type"] == "application/json"  # Anthropic's API requires it
    assert headers["user-agent"].startswith("chatgate/")
    assert "accept-encoding" not in headers  # a stream of small events comes uncompressed


async def test_a_tables_user_agent_replaces_chatgates_in_any_case() -> None:
    async with FakeUpstream(OK) as fake:
        await stream_once("openai", fake.url, HELLO, headers={"User-Agent": "acme/2"})
    user_agents = [line for line in fake.requests[0].head.splitlines() if line.lower().startswith("user-agent:")]
    assert user_agents == ["User-Agent: acme/2"]


async def run_events_with(kind: str, url: str, **table: Any) -> list[RunEvent]:
    """A whole run through the runner, on a provider table with ``table``'s settings."""
    async with provider(kind, url, **table) as model:
        return await collect(run_agent(agent_on(model), RunInput(HELLO)))


async def chunks(*pieces: bytes) -> AsyncIterator[bytes]:
    for piece in pieces:
        yield piece


async def test_sse_lines_split_anywhere_including_between_cr_and_lf() -> None:
    pieces = (b"event: a\r", b"\ndata: 1\r\n", b"\r", b"\n: comment\nid: 7\ndata: x\ndata: y\n\ndata: no end")
    messages = [message async for message in sse_messages(chunks(*pieces))]
    assert messages == [("a", b"1"), ("", b"x\ny")]


async def test_sse_bare_cr_line_endings_and_data_without_a_space() -> None:
    messages = [message async for message in sse_messages(chunks(b"data:1\r\rdata: 2\r\r"))]
    assert messages == [("", b"1"), ("", b"2")]


async def test_sse_a_whole_message_in_one_read_keeps_what_earlier_reads_began() -> None:
    pieces = (b"event: a\n", b"data: 1\n\n", b"data: 2\n", b"data: 3\n\n", b"data: 4\rx\n\n", b"data: 5\n\n")
    messages = [message async for message in sse_messages(chunks(*pieces))]
    assert messages == [("a", b"1"), ("", b"2\n3"), ("", b"4"), ("", b"5")]


async def test_sse_whole_messages_with_an_event_line_as_anthropic_sends_them() -> None:
    pieces = (b"event: a\ndata: 1\n\n", b"event: b\ndata: {}\n\n", b"event: c\nid: 2\n\n", b"event: d\ndata:4\n\n")
    messages = [message async for message in sse_messages(chunks(*pieces))]
    assert messages == [("a", b"1"), ("b", b"{}"), ("d", b"4")]


SSE_LINES = st.lists(
    st.sampled_from([b"data: x", b"data:y", b"data: ", b"event: e", b"event:f", b": ping", b"id: 1", b"", b"data: {}"]),
    max_size=12,
)


@settings(max_examples=300, deadline=None)
@given(
    lines=SSE_LINES,
    ending=st.sampled_from([b"\n", b"\r\n", b"\r"]),
    cuts=st.lists(st.integers(min_value=0, max_value=200), max_size=8),
)
def test_sse_messages_do_not_depend_on_how_the_stream_is_cut(
    lines: list[bytes], ending: bytes, cuts: list[int]
) -> None:
    stream = b"".join(line + ending for line in lines)
    edges = sorted({0, len(stream), *(cut for cut in cuts if cut < len(stream))})
    pieces = [stream[start:end] for start, end in pairwise(edges)]

    async def read(*parts: bytes) -> list[tuple[str, bytes]]:
        return [message async for message in sse_messages(chunks(*parts))]

    assert asyncio.run(read(*pieces)) == asyncio.run(read(*(stream[i : i + 1] for i in range(len(stream)))))


async def test_ndjson_lines_split_anywhere_and_a_last_line_without_newline() -> None:
    objects = [obj async for obj in ndjson_objects(chunks(b'{"a":', b' 1}\n\n{"b"', b": 2}"), "test")]
    assert objects == [{"a": 1}, {"b": 2}]


async def test_ndjson_that_is_not_json_is_a_malformed_stream() -> None:
    with pytest.raises(ProviderError) as caught:
        [obj async for obj in ndjson_objects(chunks(b"{oops}\n"), "test")]
    assert caught.value.public_message == "The model stream was interrupted."


async def test_a_compressed_stream_is_decoded() -> None:
    body = openai_chunk({"content": "squeezed"}) + openai_chunk({}, "stop") + DONE
    headers = {"content-type": "text/event-stream", "content-encoding": "gzip"}
    async with FakeUpstream(Reply([gzip.compress(body)], headers=headers)) as fake:
        events = await stream_once("openai", fake.url, HELLO)
    assert [e.delta for e in events if isinstance(e, TextDelta)] == ["squeezed"]

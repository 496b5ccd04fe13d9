"""chatgate's upstream transport against real sockets: keep-alive, framing, hang-ups, timeouts and TLS."""

from __future__ import annotations

import asyncio
import ssl
import subprocess
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path

import httpx
import pytest

from chatgate.providers.transport import UpstreamTransport
from tests.providers.fakes import FakeUpstream, Reply, openai_chunk

Handler = Callable[[asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]]
DONE = b"data: [DONE]\n\n"


@asynccontextmanager
async def raw_upstream(handler: Handler, tls: ssl.SSLContext | None = None) -> AsyncIterator[str]:
    """A server on loopback that runs ``handler`` per connection; yields its base URL."""
    handlers: set[asyncio.Task[None]] = set()

    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        handlers.add(task)
        try:
            await handler(reader, writer)
        except (ConnectionError, asyncio.IncompleteReadError, ssl.SSLError):
            pass
        finally:
            writer.close()

    server = await asyncio.start_server(serve, "127.0.0.1", 0, ssl=tls)
    port = server.sockets[0].getsockname()[1]
    try:
        yield f"{'https' if tls else 'http'}://127.0.0.1:{port}"
    finally:
        server.close()
        for task in handlers:
            task.cancel()
        await asyncio.gather(*handlers, return_exceptions=True)
        await server.wait_closed()


async def read_request(reader: asyncio.StreamReader) -> bytes:
    """One request's head and Content-Length body."""
    head = await reader.readuntil(b"\r\n\r\n")
    length = next(
        (int(line.split(b":")[1]) for line in head.split(b"\r\n") if line.lower().startswith(b"content-length")), 0
    )
    return head + await reader.readexactly(length)


async def test_sequential_requests_reuse_one_connection_and_bodies_arrive_whole() -> None:
    reply = Reply([openai_chunk({"content": "a"}), openai_chunk({"content": "b"}), DONE])
    async with FakeUpstream(reply) as fake, httpx.AsyncClient(transport=UpstreamTransport()) as client:
        for _ in range(5):
            response = await client.post(fake.url + "/v1/chat/completions?x=1", json={"n": 1})
            assert response.status_code == 200
            assert response.content.endswith(DONE) and b'"content": "a"' in response.content
    assert (len(fake.requests), fake.connections) == (5, 1)
    assert fake.requests[0].body == {"n": 1}


async def test_concurrent_streams_each_get_a_connection_and_closing_mid_stream_hangs_up() -> None:
    slow = Reply([openai_chunk({"content": "tick"}), *[0.05, openai_chunk({"content": "tick"})] * 100, DONE])
    transport = UpstreamTransport()
    async with FakeUpstream(slow) as fake, httpx.AsyncClient(transport=transport) as client:
        responses = [
            await client.send(client.build_request("POST", fake.url + "/v1/chat/completions", json={}), stream=True)
            for _ in range(20)
        ]
        assert transport.open_connections == 20
        for response in responses:
            await response.aclose()
        for _ in range(200):
            if len(fake.closed_at) == 20 and transport.open_connections == 0:
                break
            await asyncio.sleep(0.01)
        assert (len(fake.closed_at), transport.open_connections) == (20, 0)


async def test_a_keepalive_connection_the_upstream_closed_is_replaced_without_an_error() -> None:
    connections = 0

    async def answer_once_then_close(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        nonlocal connections
        connections += 1
        await read_request(reader)
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
        await writer.drain()
        await asyncio.sleep(0.05)
        writer.close()  # an idle keep-alive connection the upstream times out

    async with raw_upstream(answer_once_then_close) as url, httpx.AsyncClient(transport=UpstreamTransport()) as client:
        assert (await client.post(url, content=b"1")).text == "ok"
        await asyncio.sleep(0.2)
        assert (await client.post(url, content=b"2")).text == "ok"
    assert connections == 2


@pytest.mark.parametrize(
    ("answer", "body"),
    [
        (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n2\r\nde\r\n0\r\n\r\n", b"abcde"),
        (b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nabcde", b"abcde"),
        (b"HTTP/1.1 200 OK\r\nConnection: close\r\n\r\nabcde", b"abcde"),  # delimited by the close
        (b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 201 Created\r\nContent-Length: 2\r\n\r\nok", b"ok"),
    ],
)
async def test_every_body_framing_is_read_exactly(answer: bytes, body: bytes) -> None:
    async def respond(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await read_request(reader)
        writer.write(answer)
        await writer.drain()
        if b"close" in answer:
            writer.close()

    async with raw_upstream(respond) as url, httpx.AsyncClient(transport=UpstreamTransport()) as client:
        response = await client.post(url, content=b"x")
        assert response.content == body


@pytest.mark.parametrize(
    ("answer", "error"),
    [
        (b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc", "closed the connection mid-response"),
        (b"HTTP/1.1 20", "mid-headers"),
        (b"", "before answering"),
        (b"NOT HTTP AT ALL\r\n\r\n", "invalid HTTP response"),
    ],
)
async def test_an_upstream_that_breaks_off_is_a_remote_protocol_error(answer: bytes, error: str) -> None:
    async def break_off(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await read_request(reader)
        writer.write(answer)
        await writer.drain()
        writer.close()

    async with raw_upstream(break_off) as url, httpx.AsyncClient(transport=UpstreamTransport()) as client:
        with pytest.raises(httpx.RemoteProtocolError, match=error):
            await client.post(url, content=b"x")


async def test_refused_connections_and_silent_upstreams_are_httpx_errors() -> None:
    async def silent(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await asyncio.sleep(5)

    transport = UpstreamTransport()
    async with httpx.AsyncClient(transport=transport) as client:
        async with raw_upstream(silent) as url:
            with pytest.raises(httpx.ReadTimeout):
                await client.post(url, content=b"x", timeout=httpx.Timeout(1.0, read=0.2))
            tls_url = url.replace("http://", "https://")
            with pytest.raises(httpx.ConnectTimeout):  # the TLS handshake never answered
                await client.post(tls_url, content=b"x", timeout=httpx.Timeout(0.2))
        with pytest.raises(httpx.ConnectError):
            await client.post(url, content=b"x")
        with pytest.raises(httpx.LocalProtocolError):
            await client.post(url, content=b"x", headers={"x-evil": "a\r\nx-injected: 1"})
    assert transport.open_connections == 0


async def test_a_large_body_read_slowly_arrives_intact() -> None:
    payload = bytes(range(256)) * 8192  # 2 MiB: the connection pauses reading until the reader catches up

    async def big(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await read_request(reader)
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n" % len(payload) + payload)
        await writer.drain()

    received = bytearray()
    async with (
        raw_upstream(big) as url,
        httpx.AsyncClient(transport=UpstreamTransport()) as client,
        client.stream("POST", url, content=b"x") as response,
    ):
        async for chunk in response.aiter_raw():
            received += chunk
            await asyncio.sleep(0.001)
    assert bytes(received) == payload


async def test_tls_upstreams_are_verified_and_served(tmp_path: Path) -> None:
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    subprocess.run(
        [
            "openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=localhost",
            "-addext", "subjectAltName=IP:127.0.0.1", "-keyout", str(key), "-out", str(cert),
        ],
        check=True,
        capture_output=True,
    )  # fmt: skip
    server_tls = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    server_tls.load_cert_chain(cert, key)

    async def respond(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        while True:
            try:
                await read_request(reader)
            except asyncio.IncompleteReadError:
                return
            writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 6\r\n\r\nsecret")
            await writer.drain()

    async with raw_upstream(respond, tls=server_tls) as url:
        async with httpx.AsyncClient(transport=UpstreamTransport()) as client:
            with pytest.raises(httpx.ConnectError, match="CERTIFICATE_VERIFY_FAILED"):
                await client.post(url, content=b"x")  # not trusted by the default context
        trusting = ssl.create_default_context(cafile=str(cert))
        transport = UpstreamTransport(ssl_context=trusting)
        async with httpx.AsyncClient(transport=transport) as client:
            assert [(await client.post(url, content=b"x")).text for _ in range(3)] == ["secret"] * 3
            assert transport.open_connections == 1

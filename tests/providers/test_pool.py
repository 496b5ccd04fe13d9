"""The sharded upstream pool: small shards, connections reused, slots freed when a response closes."""

import asyncio
import contextlib

import httpx
import pytest

from chatgate.providers.http import upstream_client
from chatgate.providers.pool import ShardedTransport
from tests.providers.fakes import FakeUpstream, Reply, openai_chunk

DONE = b"data: [DONE]\n\n"
OK = Reply([openai_chunk({"content": "ok"}), DONE])
SLOW = Reply([openai_chunk({"content": "tick"}), *[0.05, openai_chunk({"content": "tick"})] * 200, DONE])


async def test_sequential_requests_reuse_one_connection() -> None:
    transport = ShardedTransport(shard_size=4)
    async with FakeUpstream(OK) as fake, httpx.AsyncClient(transport=transport) as client:
        for _ in range(5):
            (await client.post(fake.url + "/v1/chat/completions", json={})).raise_for_status()
        assert transport.shard_count == 1
    assert (len(fake.requests), fake.connections) == (5, 1)


async def test_open_streams_fill_shards_of_bounded_size_and_closing_them_frees_the_slots() -> None:
    transport = ShardedTransport(shard_size=4, spare_shards=1)
    async with FakeUpstream(SLOW) as fake, httpx.AsyncClient(transport=transport) as client:
        requests = [client.build_request("POST", fake.url + "/v1/chat/completions", json={}) for _ in range(10)]
        responses = [await client.send(request, stream=True) for request in requests]
        assert transport.shard_count == 3  # 4 + 4 + 2
        for response in responses:
            await response.aclose()
        assert transport.shard_count == 1  # emptied shards beyond the spare one are closed
        assert len(fake.closed_at) >= 10 - 4  # closing mid-stream hung up on the upstream

        await client.post(fake.url + "/v1/chat/completions", json={})  # the pool still works afterwards
        assert transport.shard_count == 1


async def test_a_failed_request_frees_its_slot() -> None:
    transport = ShardedTransport(shard_size=1)
    async with httpx.AsyncClient(transport=transport) as client:
        for _ in range(3):
            with contextlib.suppress(httpx.ConnectError):
                await client.post("http://127.0.0.1:9/", json={})  # the discard port: refused
        assert transport.shard_count == 1


async def test_many_concurrent_streams_are_all_served() -> None:
    transport = ShardedTransport(shard_size=8)
    async with FakeUpstream(OK) as fake, httpx.AsyncClient(transport=transport) as client:
        replies = await asyncio.gather(*(client.post(fake.url + "/v1/chat/completions", json={}) for _ in range(50)))
        assert all(reply.status_code == 200 and b"[DONE]" in reply.content for reply in replies)
        assert len(fake.requests) == 50


async def test_the_upstream_client_still_honours_the_environments_proxy(monkeypatch: pytest.MonkeyPatch) -> None:
    async with FakeUpstream(OK) as proxy:
        monkeypatch.setenv("HTTP_PROXY", proxy.url)
        monkeypatch.delenv("NO_PROXY", raising=False)
        monkeypatch.delenv("no_proxy", raising=False)
        async with upstream_client() as client:
            (await client.post("http://model.invalid/v1/chat/completions", json={})).raise_for_status()
    assert proxy.requests[0].path == "http://model.invalid/v1/chat/completions"  # absolute form: proxied

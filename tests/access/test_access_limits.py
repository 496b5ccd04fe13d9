"""Per-key rpm and max_concurrent_streams against live servers: in process, and shared through a real Redis.

Each test uses its own key id, so counts in the session's one Redis never mix between tests.
"""

import asyncio
import socket
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import anyio
import httpx
import pytest

from chatgate.access import redis_limits
from chatgate.config import Config
from chatgate.errors import RequestError
from chatgate.web.redis_pool import connect_redis
from tests.conftest import make_config

Serve = Callable[[Config], str]
SECRET = "limits-secret-0123456789"
AUTH = {"authorization": f"Bearer {SECRET}"}
BODY = {"threadId": "t", "runId": "r", "messages": [{"id": "u1", "role": "user", "content": "one two three"}]}


def limited_config(redis: str | None, *, delay: float = 0, **key: Any) -> Config:
    server: dict[str, Any] = {"redis_url": redis} if redis else {}
    agent = {"model": "builtin:echo", "default": True, "model_settings": {"delay": delay}}
    key_id = f"k{uuid.uuid4().hex[:12]}"
    return make_config({"bot": agent}, keys=[{"id": key_id, "key": SECRET, **key}], server=server)


@pytest.fixture(params=["memory", "redis"])
def redis(request: pytest.FixtureRequest) -> str | None:
    """None for in-process limits, else the session's real Redis."""
    if request.param == "memory":
        return None
    url: str = request.getfixturevalue("redis_url")
    return url


def post(base: str) -> httpx.Response:
    return httpx.post(f"{base}/ag-ui", json=BODY, headers=AUTH, timeout=30)


@contextmanager
def open_stream(base: str) -> Iterator[httpx.Response]:
    """A stream that has started (its first frame read) and is held open until the block ends."""
    with (
        httpx.Client(timeout=30) as client,
        client.stream("POST", f"{base}/ag-ui", json=BODY, headers=AUTH) as response,
    ):
        assert response.status_code == 200
        chunks = response.iter_raw()  # kept: a dropped iterator would close the response
        next(chunks)
        yield response


def post_when_free(base: str, seconds: float) -> httpx.Response:
    """``post``, tried again while it is refused for a stream slot, for up to ``seconds``."""
    deadline = time.monotonic() + seconds
    response = post(base)
    while response.status_code == 429 and time.monotonic() < deadline:
        time.sleep(0.05)
        response = post(base)
    return response


def admitted_within(base: str, seconds: float) -> bool:
    """Whether a new stream starts within ``seconds`` (each try reads only its first frame)."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        with httpx.Client(timeout=30) as client, client.stream("POST", f"{base}/ag-ui", json=BODY, headers=AUTH) as r:
            if r.status_code == 200:
                return True
        time.sleep(0.05)
    return False


def test_rpm_refuses_with_429_and_retry_after(serve: Serve, redis: str | None) -> None:
    base = serve(limited_config(redis, rpm=2))
    assert [post(base).status_code for _ in range(2)] == [200, 200]
    refused = post(base)
    assert refused.status_code == 429
    assert refused.json()["error"]["code"] == "rate_limited"
    assert refused.json()["error"]["details"] == [{"limit": "rpm", "allowed": "2"}]
    assert 1 <= int(refused.headers["retry-after"]) <= 60
    assert httpx.get(f"{base}/agents", headers=AUTH).status_code == 429  # every request of the key counts
    assert httpx.get(f"{base}/healthz").status_code == 200


def test_rpm_is_per_key(serve: Serve, redis: str | None) -> None:
    config = limited_config(redis, rpm=1)
    other = {"id": f"o{uuid.uuid4().hex[:12]}", "key": "other-secret-0123456789", "rpm": 1}
    config = make_config(
        {"bot": {"model": "builtin:echo", "default": True}},
        keys=[config.keys[0].model_dump(exclude_none=True), other],
        server=config.server.model_dump(exclude_defaults=True),
    )
    base = serve(config)
    assert post(base).status_code == 200
    assert post(base).status_code == 429
    assert httpx.post(f"{base}/ag-ui", json=BODY, headers={"x-api-key": "other-secret-0123456789"}).status_code == 200


def test_a_stream_holds_its_slot_until_it_ends(serve: Serve, redis: str | None) -> None:
    base = serve(limited_config(redis, delay=0.5, max_concurrent_streams=1))
    with open_stream(base):
        refused = post(base)
        assert refused.status_code == 429
        assert refused.json()["error"]["code"] == "too_many_streams"
    # The client hung up: the slot comes back long before the reply (about 3 s at 0.5 s a word) would end.
    assert admitted_within(base, 1.5)
    # That try hung up too: its slot comes back as the first one's did, so this one may wait for it.
    assert post_when_free(base, 1.5).status_code == 200  # read to its end: a finished stream gives its slot back
    assert admitted_within(base, 1)


def test_a_failed_stream_gives_its_slot_back(serve: Serve, redis: str | None) -> None:
    config = limited_config(redis, max_concurrent_streams=1)
    failing = make_config(
        {"bot": {"model": "builtin:echo", "default": True, "model_settings": {"fail_after": 1}}},
        keys=[config.keys[0].model_dump(exclude_none=True)],
        server=config.server.model_dump(exclude_defaults=True),
    )
    base = serve(failing)
    for _ in range(3):
        response = post(base)
        assert response.status_code == 200
        assert "RUN_ERROR" in response.text


def test_two_replicas_share_one_budget_through_redis(serve: Serve, redis_url: str) -> None:
    config = limited_config(redis_url, rpm=3)
    first, second = serve(config), serve(config)
    assert [post(first).status_code, post(second).status_code] == [200, 200]
    with open_stream(first):  # the third request of the minute
        assert post(second).json()["error"]["code"] == "rate_limited"
    config = limited_config(redis_url, delay=0.5, max_concurrent_streams=1)
    first, second = serve(config), serve(config)
    with open_stream(first):
        assert post(second).json()["error"]["code"] == "too_many_streams"
    assert admitted_within(second, 1.5)


def dead_redis_url() -> str:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"redis://127.0.0.1:{port}/0"  # nothing listens there once the socket is closed


def test_redis_down_refuses_with_503_by_default(serve: Serve) -> None:
    base = serve(limited_config(dead_redis_url(), rpm=5))
    response = post(base)
    assert response.status_code == 503
    assert response.json()["error"]["code"] == "limits_unavailable"
    assert httpx.get(f"{base}/healthz").status_code == 200
    streams = serve(limited_config(dead_redis_url(), max_concurrent_streams=1))
    assert post(streams).status_code == 503


def test_redis_down_lets_requests_through_when_open(serve: Serve) -> None:
    config = limited_config(dead_redis_url(), rpm=1, max_concurrent_streams=1)
    config = make_config(
        {"bot": {"model": "builtin:echo", "default": True}},
        keys=[config.keys[0].model_dump(exclude_none=True)],
        server={"redis_url": config.server.redis_url, "redis_failure": "open"},
    )
    base = serve(config)
    assert [post(base).status_code for _ in range(3)] == [200, 200, 200]


async def test_a_crashed_replicas_slot_expires_and_a_running_one_is_kept(
    redis_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(redis_limits, "SLOT_TTL_SECONDS", 1)
    monkeypatch.setattr(redis_limits, "SLOT_REFRESH_SECONDS", 0.3)
    client = connect_redis(redis_url)
    limits = redis_limits.RedisLimits(client, "closed")
    key_id = f"c{uuid.uuid4().hex[:12]}"
    try:
        await limits.open_stream(key_id, 1)  # never released: its replica "crashed"
        with pytest.raises(RequestError):
            await limits.open_stream(key_id, 1)
        await asyncio.sleep(1.2)
        running = await limits.open_stream(key_id, 1)
        async with anyio.create_task_group() as group:
            group.start_soon(running.keep)
            await asyncio.sleep(1.5)  # past its first expiry: kept alive by the refreshes
            with pytest.raises(RequestError):
                await limits.open_stream(key_id, 1)
            group.cancel_scope.cancel()
        await running.release()
        await limits.open_stream(key_id, 1)
    finally:
        await client.aclose()


def test_refusals_by_rpm_and_by_streams_are_counted_in_the_metrics(serve: Serve) -> None:
    agent = {"model": "builtin:echo", "default": True, "model_settings": {"delay": 0.5}}
    keys = [
        {"id": "limited", "key": SECRET, "rpm": 3, "max_concurrent_streams": 1},
        {"id": "ops", "key": "ops-secret-0123456789", "admin": True},
    ]
    base = serve(make_config({"bot": agent}, keys=keys))
    with open_stream(base):
        assert post(base).json()["error"]["code"] == "too_many_streams"
    assert post(base).status_code == 200
    assert post(base).json()["error"]["code"] == "rate_limited"
    text = httpx.get(f"{base}/metrics", headers={"authorization": "Bearer ops-secret-0123456789"}).text
    assert 'chatgate_rate_limited_requests_total{key="limited",limit="max_concurrent_streams"} 1.0' in text
    assert 'chatgate_rate_limited_requests_total{key="limited",limit="rpm"} 1.0' in text

"""Reservations: 20 requests at once against a budget worth 3 calls reach the upstream at most 3 times.

The fake upstream holds every answer until each of the 20 requests was refused or reached it, so all
of them are admitted or refused while no call has reported its usage: the worst case for a budget that
checks and spends later. It then counts the calls that reached it. Each answer reports 120 tokens
costing $0.000104 (tests/usage/support.py); each call reserves 149 tokens (a 500-character message is
estimated at 129, plus ``max_tokens = 20``) costing $0.000169. Afterwards, the budget is used up one
request at a time: every reservation went back, so exactly the 3 calls it is worth reach the upstream.
"""

from __future__ import annotations

import asyncio
import secrets
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from typing import Any

import httpx
import pytest
from redis import Redis

from chatgate.caller import Caller
from chatgate.config import Budget, Config
from chatgate.web.app import create_app
from tests.conftest import LiveServer, make_config
from tests.providers.fakes import FakeUpstream, Recorded, Reply, fake_in_thread
from tests.providers.support import provider_table
from tests.usage.support import PRICING, answer

PROMPT = "word " * 100
CONCURRENT = 20
BUDGETS: dict[str, dict[str, Any]] = {
    "key": {"tokens_per_day": 360},  # 3 answers of 120 tokens: the third reaches it
    "key+slots": {"tokens_per_day": 360},  # with max_concurrent_streams: reserved as the slot is taken
    "agent": {"tokens_per_day": 360},
    "person": {"tokens_per_day": 360},
    "usd": {"usd_per_day": 0.000312},  # 3 answers of $0.000104
}


class HeldUpstream(FakeUpstream):
    """The fake upstream, answering nothing until the test sets ``release``."""

    def __init__(self, *replies: Reply) -> None:
        super().__init__(*replies)
        self.release = threading.Event()

    async def reply_to(self, request: Recorded) -> Reply:
        while not self.release.is_set():
            await asyncio.sleep(0.005)
        return await super().reply_to(request)


class Setup:
    """One budget of ``kind`` on a fresh key, agent and person (the session's Redis is shared)."""

    def __init__(self, kind: str, upstream: str, redis_url: str | None) -> None:
        tag = secrets.token_hex(4)
        self.kind, self.agent, self.key_id, self.user = kind, f"bot{tag}", f"k{tag}", f"alice-{tag}"
        self.secret = f"secret-{tag}-0123456789"
        budget = BUDGETS[kind]
        agent: dict[str, Any] = {"model": "up:model-x", "model_settings": {"max_tokens": 20}}
        if kind in ("agent", "usd"):
            agent["budget"] = budget
        key: dict[str, Any] = {"id": self.key_id, "key": self.secret, "trusted_user_header": True}
        if kind.startswith("key"):
            key["budget"] = budget
        if kind == "key+slots":
            key["max_concurrent_streams"] = CONCURRENT
        top: dict[str, Any] = {
            "providers": {"up": provider_table("openai", upstream)},
            "keys": [key],
            "pricing": PRICING,
        }
        if redis_url is not None:
            top["server"] = {"redis_url": redis_url}
        self.config: Config = make_config({self.agent: agent}, **top)

    def person_budget(self, caller: Caller) -> Budget | None:
        return Budget(**BUDGETS["person"]) if self.kind == "person" and caller.user else None

    def ask(self, url: str) -> httpx.Response:
        body = {"id": "c", "messages": [{"id": "u1", "role": "user", "parts": [{"type": "text", "text": PROMPT}]}]}
        headers = {"authorization": f"Bearer {self.secret}", "x-chatgate-user": self.user}
        return httpx.post(f"{url}/agents/{self.agent}/chat", json=body, headers=headers, timeout=60)


@pytest.fixture
def servers() -> Iterator[Callable[[Setup, int], list[str]]]:
    started: list[LiveServer] = []

    def start(setup: Setup, replicas: int) -> list[str]:
        for _ in range(replicas):
            started.append(LiveServer(create_app(setup.config, person_budget=setup.person_budget)))
            started[-1].start()
        return [server.url for server in started]

    yield start
    for server in started:
        server.begin_stop()
    for server in started:
        server.stop()


def _burst(setup: Setup, urls: list[str], fake: HeldUpstream) -> list[httpx.Response]:
    """``CONCURRENT`` requests at once over ``urls``; the fake answers once each was refused or reached it."""
    with ThreadPoolExecutor(CONCURRENT) as pool:
        futures = [pool.submit(setup.ask, urls[i % len(urls)]) for i in range(CONCURRENT)]
        deadline = time.monotonic() + 120
        while sum(future.done() for future in futures) + len(fake.requests) < CONCURRENT:
            assert time.monotonic() < deadline, [future.done() for future in futures]
            time.sleep(0.01)
        fake.release.set()
        return [future.result() for future in futures]


def _spend_the_rest(setup: Setup, url: str) -> httpx.Response:
    """Ask one at a time until refused (a few at most); the refusal."""
    for _ in range(5):
        response = setup.ask(url)
        if response.status_code != 200:
            return response
    raise AssertionError("the budget was never spent")


def _admitted(burst: list[httpx.Response], refusal: httpx.Response) -> int:
    """How many of ``burst`` were answered; every other one, and ``refusal``, was refused for the budget."""
    for refused in [response for response in burst if response.status_code != 200] + [refusal]:
        assert refused.status_code == 429, refused.text
        assert refused.json()["error"]["code"] == "budget_exceeded"
    answered = [response for response in burst if response.status_code == 200]
    for response in answered:  # each answered in full: its usage settled, no refusal at its end
        assert '"finish"' in response.text and '"error"' not in response.text, response.text
    return len(answered)


@pytest.mark.parametrize("kind", list(BUDGETS))
def test_a_burst_in_one_process_makes_at_most_the_calls_the_budget_is_worth(
    kind: str, servers: Callable[[Setup, int], list[str]]
) -> None:
    with fake_in_thread(fake=HeldUpstream(answer())) as fake:
        setup = Setup(kind, fake.url, None)
        (url,) = servers(setup, 1)
        burst = _burst(setup, [url], fake)
        in_burst = len(fake.requests)
        refusal = _spend_the_rest(setup, url)
    admitted = _admitted(burst, refusal)
    assert 1 <= in_burst == admitted <= 3, in_burst
    assert len(fake.requests) == 3  # no reservation was left behind: the whole budget was usable


@pytest.mark.parametrize("kind", list(BUDGETS))
def test_a_burst_over_two_replicas_makes_at_most_the_calls_the_budget_is_worth(
    kind: str, servers: Callable[[Setup, int], list[str]], redis_url: str
) -> None:
    with fake_in_thread(fake=HeldUpstream(answer())) as fake:
        setup = Setup(kind, fake.url, redis_url)
        urls = servers(setup, 2)
        burst = _burst(setup, urls, fake)
        in_burst = len(fake.requests)
        refusal = _spend_the_rest(setup, urls[1])
    admitted = _admitted(burst, refusal)
    assert 1 <= in_burst == admitted <= 3, in_burst
    assert len(fake.requests) == 3
    # Settled: the counters hold the real spend only, and no reservation is left.
    scope = f"person:{setup.key_id}/{setup.user}"
    if kind.startswith("key"):
        scope = f"key:{setup.key_id}"
    elif kind in ("agent", "usd"):
        scope = f"agent:{setup.agent}"
    with Redis.from_url(redis_url) as redis:
        assert int(redis.get(f"chatgate:spend:{scope}:{datetime.now(UTC):%Y-%m-%d}:tokens") or 0) == 360
        assert redis.zcard(f"chatgate:holds:{scope}") == 0
        assert redis.zcard(f"chatgate:streams:{setup.key_id}") == 0


@pytest.mark.parametrize("shared", [False, True], ids=["memory", "redis"])
def test_a_request_refused_for_its_stream_slot_reserves_nothing(
    shared: bool, servers: Callable[[Setup, int], list[str]], request: pytest.FixtureRequest
) -> None:
    with fake_in_thread(fake=HeldUpstream(answer())) as fake:
        setup = Setup("key+slots", fake.url, request.getfixturevalue("redis_url") if shared else None)
        setup.config = setup.config.model_copy(
            update={"keys": tuple(key.model_copy(update={"max_concurrent_streams": 1}) for key in setup.config.keys)}
        )
        (url,) = servers(setup, 1)
        with ThreadPoolExecutor(1) as pool:
            first = pool.submit(setup.ask, url)
            deadline = time.monotonic() + 60
            while not fake.requests:  # the first request holds the one slot, waiting at the fake
                assert time.monotonic() < deadline
                time.sleep(0.01)
            refused = setup.ask(url)
            fake.release.set()
            assert first.result().status_code == 200
        refusal = _spend_the_rest(setup, url)
    assert refused.status_code == 429 and refused.json()["error"]["code"] == "too_many_streams", refused.text
    assert refusal.json()["error"]["code"] == "budget_exceeded"
    assert len(fake.requests) == 3  # the refused request's reservation, had it been kept, would leave room for 2

"""Prompt versions and variants over HTTP: assigned by weight, sticky across turns and replicas, recorded.

Two chatgate apps share one store (SQLite file or PostgreSQL database) as two replicas would; a fake
OpenAI upstream records what system prompt each run sent.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from chatgate.config import Config
from tests.conftest import check_ag_ui_events, make_config
from tests.providers.fakes import fake_in_thread
from tests.providers.support import provider_table
from tests.usage.support import PRICING, answer, chunks, headers, keys, wait_for_runs
from tests.usage.test_usage import Serve

PROMPTS = {"a": "You answer tersely.", "b": "You answer at length."}
VARIANTS = {
    "a": {"weight": 3, "system_prompt": PROMPTS["a"], "version": "terse-1"},
    "b": {"weight": 1, "system_prompt": PROMPTS["b"]},
}


def _config(upstream: str, store_url: str, conversations: str) -> Config:
    agent = {
        "model": "up:model-x",
        "system_prompt": "Plain.",
        "variants": VARIANTS,
        "conversations": conversations,
        "prompts": {"pirate": "You are a pirate."},
    }
    return make_config(
        {"bot": agent},
        providers={"up": provider_table("openai", upstream)},
        keys=keys(),
        pricing=PRICING,
        store={"url": store_url},
    )


PEOPLE = 1000
"""Stateless conversations of two turns, one on each replica (the issue's figure)."""
THREADS = 200
"""Stored conversations of two turns, one on each replica."""


@pytest.fixture
def client() -> Iterator[httpx.Client]:
    """One client for all of a test's runs: a new client a request costs more than the run itself."""
    with httpx.Client(timeout=30) as shared:
        yield shared


def _turn(client: httpx.Client, url: str, thread: str, user: str, text: str, **extra: str) -> dict[str, Any]:
    body = {
        "id": thread,
        "messages": [{"id": f"u-{text}", "role": "user", "parts": [{"type": "text", "text": text}]}],
        "trigger": "submit-message",
    }
    response = client.post(f"{url}/agents/bot/chat", json=body, headers=headers("k1", user) | extra)
    assert response.status_code == 200, response.text
    metadata: dict[str, Any] = chunks(response)[-1]["messageMetadata"]
    return metadata


def _sent_prompts(requests: list[Any]) -> list[str]:
    return [request.body["messages"][0]["content"] for request in requests]


def _within_band(picks: list[str]) -> None:
    """Weights 3:1: the count of ``a`` is binomial(n, 3/4); 4 standard deviations miss once in ~16,000 runs
    of a fair assignment (the assignment is a hash of ids, so a given id list always lands the same)."""
    n, share = len(picks), 3 / 4
    assert abs(picks.count("a") - n * share) <= 4 * math.sqrt(n * share * (1 - share)), picks.count("a")


def test_people_split_by_weight_stay_on_their_variant_across_replicas(
    serve: Serve, store_url: str, client: httpx.Client
) -> None:
    with fake_in_thread(answer()) as fake:
        replicas = [serve(_config(fake.url, store_url, "client")) for _ in range(2)]
        people = [f"person-{i}" for i in range(PEOPLE)]
        first = [_turn(client, replicas[0], "c", person, "one") for person in people]
        second = [_turn(client, replicas[1], "c", person, "two") for person in people]
    assert [m["variant"] for m in first] == [m["variant"] for m in second]  # sticky, whichever replica
    _within_band([m["variant"] for m in first])
    versions = {m["variant"]: m["promptVersion"] for m in first}
    assert versions["a"] == "terse-1" and versions["b"] == first[[m["variant"] for m in first].index("b")]["promptHash"]
    # What reached the model is the variant's prompt, run for run.
    sent = _sent_prompts(fake.requests)
    assert sent == [PROMPTS[m["variant"]] for m in first + second]
    wait_for_runs(replicas[0], 2 * len(people))
    rows = httpx.get(
        f"{replicas[0]}/usage", params={"group_by": "variant,prompt_version"}, headers=headers("admin")
    ).json()["rows"]
    counts = {(row["variant"], row["prompt_version"]): row["runs"] for row in rows}
    assert counts == {(v, versions[v]): 2 * [m["variant"] for m in first].count(v) for v in versions}


def test_stored_threads_keep_their_variant_and_an_admin_may_force_one(
    serve: Serve, store_url: str, client: httpx.Client
) -> None:
    with fake_in_thread(answer()) as fake:
        replicas = [serve(_config(fake.url, store_url, "server")) for _ in range(2)]
        threads = [f"thread-{i}" for i in range(THREADS)]
        first = [_turn(client, replicas[0], thread, "alice", "one")["variant"] for thread in threads]
        second = [_turn(client, replicas[1], thread, "alice", "two")["variant"] for thread in threads]
        assert first == second
        _within_band(first)  # one person, many threads: assigned per thread
        forced = httpx.post(
            f"{replicas[0]}/agents/bot/chat",
            json={
                "id": "t-forced",
                "messages": [{"id": "u", "role": "user", "parts": [{"type": "text", "text": "x"}]}],
            },
            headers=headers("k1") | {"x-chatgate-variant": "b"},
        )
        assert (forced.status_code, forced.json()["error"]["code"]) == (403, "variant_forbidden")
        body = {"id": "t-admin", "messages": [{"id": "u", "role": "user", "parts": [{"type": "text", "text": "x"}]}]}
        for label in ("a", "b"):
            response = httpx.post(
                f"{replicas[0]}/agents/bot/chat",
                json=body | {"id": f"t-{label}"},
                headers=headers("admin") | {"x-chatgate-variant": label},
            )
            assert chunks(response)[-1]["messageMetadata"]["variant"] == label
        unknown = httpx.post(
            f"{replicas[0]}/agents/bot/chat", json=body, headers=headers("admin") | {"x-chatgate-variant": "zzz"}
        )
        assert (unknown.status_code, unknown.json()["error"]["code"]) == (422, "unknown_variant")
        # A thread's own system message wins over its variant, and is recorded as such.
        swapped = httpx.put(
            f"{replicas[1]}/agents/bot/threads/{threads[0]}/system-message",
            json={"prompt": "pirate"},
            headers=headers("k1", "alice"),
        )
        assert swapped.status_code == 200, swapped.text
        pirate = _turn(client, replicas[0], threads[0], "alice", "three")
        assert (
            pirate["variant"] == "prompt:pirate"
            and fake.requests[-1].body["messages"][0]["content"] == "You are a pirate."
        )
    wait_for_runs(replicas[0], 2 * len(threads) + 3)
    seen = httpx.get(f"{replicas[1]}/agents/bot/prompts", headers=headers("admin")).json()["versions"]
    runs = {(row["variant"], row["prompt_version"]): row["runs"] for row in seen}
    assert runs[("prompt:pirate", pirate["promptVersion"])] == 1 and runs[("a", "terse-1")] == 2 * first.count("a") + 1
    assert sum(runs.values()) == 2 * len(threads) + 3 and all(row["first_used"] <= row["last_used"] for row in seen)
    assert "You are a pirate" not in str(seen) and PROMPTS["a"] not in str(seen)
    refused = httpx.get(f"{replicas[1]}/agents/bot/prompts", headers=headers("k1"))
    assert (refused.status_code, refused.json()["error"]["code"]) == (403, "forbidden")
    listed = httpx.get(f"{replicas[0]}/agents", headers=headers("k1")).json()["agents"][0]
    assert {label: v["weight"] for label, v in listed["variants"].items()} == {"a": 3, "b": 1}
    assert PROMPTS["a"] not in str(listed) and PROMPTS["b"] not in str(listed)


def test_ag_ui_run_finished_names_the_prompt_as_ag_ui_core_accepts(serve: Serve, store_url: str) -> None:
    with fake_in_thread(answer()) as fake:
        url = serve(_config(fake.url, store_url, "client"))
        body = {"threadId": "t", "runId": "r", "messages": [{"id": "u1", "role": "user", "content": "Hi"}]}
        forced = headers("admin") | {"x-chatgate-variant": "a"}
        response = httpx.post(f"{url}/agents/bot/ag-ui", json=body, headers=forced, timeout=30)
    events = chunks(response)
    check_ag_ui_events(events)
    assert events[-1]["type"] == "RUN_FINISHED"
    assert events[-1]["result"] == {
        "promptVersion": "terse-1",
        "promptHash": events[-1]["result"]["promptHash"],
        "variant": "a",
    }
    assert events[-1]["result"]["promptHash"] == hashlib.sha256(PROMPTS["a"].encode()).hexdigest()[:12]

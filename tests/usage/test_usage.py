"""Usage is recorded once per run from the provider's own report, priced, and shown per caller.

A fake OpenAI upstream on loopback reports usage (with cached and reasoning details); the ledger is a
real SQLite file or PostgreSQL database, or memory with no store.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import asyncpg
import httpx
import pytest

from chatgate.config import Config
from tests.conftest import make_config
from tests.providers.fakes import fake_in_thread
from tests.providers.support import provider_table
from tests.providers.test_ui_clients import use_chat
from tests.usage.support import COST, PRICING, answer, chat, chunks, headers, keys, wait_for_runs

Serve = Callable[[Config], str]


def config(upstream: str, store_url: str | None = None, **agent: Any) -> Config:
    top: dict[str, Any] = {
        "providers": {"up": provider_table("openai", upstream)},
        "keys": keys(),
        "pricing": PRICING,
    }
    if store_url is not None:
        top["store"] = {"url": store_url}
    return make_config({"bot": {"model": "up:model-x", **agent}}, **top)


async def _rows_in(store_url: str) -> int:
    if store_url.startswith("sqlite:///"):
        import sqlite3

        with sqlite3.connect(store_url.removeprefix("sqlite:///")) as connection:
            return int(connection.execute("SELECT COUNT(*) FROM usage").fetchone()[0])
    connection = await asyncpg.connect(store_url)
    try:
        return int(await connection.fetchval("SELECT COUNT(*) FROM usage"))
    finally:
        await connection.close()


def test_each_run_is_recorded_once_priced_and_shown_to_whom_it_belongs(serve: Serve, store_url: str) -> None:
    with fake_in_thread(answer()) as fake:
        url = serve(config(fake.url, store_url))
        finishes = [chunks(chat(url, "k1", "alice"))[-1] for _ in range(2)]
        chunks(chat(url, "k1", "bob"))
        chunks(chat(url, "k2"))
    assert len(fake.requests) == 4
    wait_for_runs(url, 4)
    assert asyncio.run(_rows_in(store_url)) == 4  # one row per run, not per token or per frame
    # The stream carries the run's usage and cost, for useChat's message.metadata, and the run's id.
    assert finishes[0]["messageMetadata"].pop("runId").startswith("run_")
    assert finishes[0]["messageMetadata"] == {
        "usage": {
            "inputTokens": 100,
            "outputTokens": 20,
            "totalTokens": 120,
            "reasoningTokens": 5,
            "cachedInputTokens": 40,
        },
        "model": "model-x",
        "provider": "up",
        "costUsd": pytest.approx(COST),
    }

    everyone = httpx.get(f"{url}/usage", params={"group_by": "key,person"}, headers=headers("admin")).json()
    rows = {(row["key"], row["person"]): row for row in everyone["rows"]}
    assert set(rows) == {("k1", "alice"), ("k1", "bob"), ("k2", None)}
    alice = rows[("k1", "alice")]
    assert (alice["runs"], alice["input_tokens"], alice["output_tokens"]) == (2, 200, 40)
    assert (alice["cached_input_tokens"], alice["reasoning_tokens"], alice["unreported_calls"]) == (80, 10, 0)
    assert alice["cost_usd"] == pytest.approx(2 * COST)
    by_day = httpx.get(f"{url}/usage", params={"group_by": "agent,model,day"}, headers=headers("admin")).json()
    ((agent, model, day, runs),) = [(r["agent"], r["model"], r["day"], r["runs"]) for r in by_day["rows"]]
    assert (agent, model, runs) == ("bot", "up:model-x", 4)
    assert day == datetime.now(UTC).strftime("%Y-%m-%d")

    # /usage is for admins; /usage/me shows a caller its own and nobody else's.
    refused = httpx.get(f"{url}/usage", headers=headers("k1", "alice"))
    assert (refused.status_code, refused.json()["error"]["code"]) == (403, "forbidden")
    mine = httpx.get(f"{url}/usage/me", params={"group_by": "person"}, headers=headers("k1", "alice")).json()
    assert [(row["person"], row["runs"]) for row in mine["rows"]] == [("alice", 2)]
    theirs = httpx.get(f"{url}/usage/me", params={"group_by": "key"}, headers=headers("k2")).json()
    assert [(row["key"], row["runs"]) for row in theirs["rows"]] == [("k2", 1)]
    # a range before the runs holds none of them
    empty = httpx.get(
        f"{url}/usage/me", params={"since": "2020-01-01", "until": "2020-02-01"}, headers=headers("k1", "alice")
    ).json()
    assert empty["rows"] == []


def test_a_provider_that_reports_no_usage_is_recorded_as_unreported_not_guessed(serve: Serve) -> None:
    with fake_in_thread(answer(usage=None)) as fake:
        url = serve(config(fake.url))  # no store: the ledger is in this process's memory
        finish = chunks(chat(url, "k2"))[-1]
    assert len(fake.requests) == 1
    assert list(finish["messageMetadata"]) == ["runId"]  # no usage to report
    wait_for_runs(url, 1)
    (row,) = httpx.get(f"{url}/usage/me", headers=headers("k2")).json()["rows"]
    assert (row["runs"], row["model_calls"], row["unreported_calls"]) == (1, 1, 1)
    assert (row["input_tokens"], row["output_tokens"], row["cost_usd"], row["unpriced_runs"]) == (None, None, None, 1)


@pytest.mark.parametrize(
    ("query", "field"),
    [({"group_by": "key,secret"}, "group_by"), ({"since": "yesterday"}, "since"), ({"until": "2000-01-01"}, "until")],
)
def test_a_bad_usage_query_is_a_422_naming_the_field(serve: Serve, query: dict[str, str], field: str) -> None:
    url = serve(make_config({"bot": {"model": "builtin:echo"}}, keys=keys()))
    response = httpx.get(f"{url}/usage", params=query, headers=headers("admin"))
    assert response.status_code == 422
    assert response.json()["error"]["details"][0]["field"] == field


def test_prometheus_counts_tokens_and_cost_by_agent_with_no_user_label(serve: Serve) -> None:
    with fake_in_thread(answer()) as fake:
        url = serve(config(fake.url))
        chat(url, "k1", "alice")
    text = httpx.get(f"{url}/metrics", headers=headers("admin")).text
    assert 'chatgate_model_tokens_total{agent="bot",provider="up",type="cached_input"} 40.0' in text
    assert 'chatgate_model_tokens_total{agent="bot",provider="up",type="reasoning"} 5.0' in text
    assert 'chatgate_model_cost_usd_total{agent="bot"}' in text
    assert "alice" not in text


@pytest.mark.parametrize("version", [5, 6, 7])
def test_the_ai_client_puts_the_runs_usage_and_cost_in_the_message_metadata(serve: Serve, version: int) -> None:
    with fake_in_thread(answer()) as fake:
        config = make_config(
            {"bot": {"model": "up:model-x", "default": True, "vercel_ai_version": f"v{version}"}},
            providers={"up": provider_table("openai", fake.url)},
            pricing=PRICING,
        )
        hello = {"id": "u1", "role": "user", "parts": [{"type": "text", "text": "Hi"}]}
        result = use_chat(serve(config), version, [hello])
    metadata = result["message"]["metadata"]  # what useChat's message carries for the frontend to show
    assert metadata["usage"]["totalTokens"] == 120 and metadata["costUsd"] == pytest.approx(COST)

"""Feedback on answers over HTTP (app/web/feedback.py): the owner's only, one per person, with the usage.

A live chatgate with a fake OpenAI upstream and a real store (SQLite file or PostgreSQL database); what
was kept is read from the ``feedback`` table itself.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable, Iterator
from typing import Any

import asyncpg
import httpx
import pytest

from chatgate.config import Config
from chatgate.usage import VariantTally, compare_variants
from tests.conftest import make_config
from tests.providers.fakes import fake_in_thread
from tests.providers.support import provider_table
from tests.store.conftest import store_url
from tests.usage.support import PRICING, answer, chunks, headers, keys, wait_for_runs

__all__ = ["store_url"]

Serve = Callable[[Config], str]
VARIANTS = {
    "a": {"weight": 1, "system_prompt": "Terse.", "version": "terse-1"},
    "b": {"weight": 1, "system_prompt": "Long."},
}


def _config(upstream: str, store: str, **extra: Any) -> Config:
    common = {"model": "up:model-x", "system_prompt": "Plain.", "variants": VARIANTS}
    agents = {
        "bot": common,
        "kept": {**common, "conversations": "server", "titles": False},
        "stars": {**common, "feedback_scale": "stars"},
        "plain": {"model": "up:model-x"},
    }
    return make_config(
        agents, providers={"up": provider_table("openai", upstream)}, keys=keys(), pricing=PRICING, store={"url": store}
    )


@pytest.fixture
def client() -> Iterator[httpx.Client]:
    with httpx.Client(timeout=30) as shared:
        yield shared


def _ask(client: httpx.Client, url: str, agent: str, thread: str, who: tuple[str, str | None]) -> dict[str, Any]:
    body = {
        "id": thread,
        "messages": [{"id": f"u-{thread}", "role": "user", "parts": [{"type": "text", "text": "hi"}]}],
    }
    response = client.post(
        f"{url}/agents/{agent}/chat", json=body | {"trigger": "submit-message"}, headers=headers(*who)
    )
    assert response.status_code == 200, response.text
    metadata: dict[str, Any] = chunks(response)[-1]["messageMetadata"]
    return metadata


async def _rows(store: str, sql: str = "") -> list[dict[str, Any]]:
    sql = (
        sql or "SELECT agent, run_id, key_id, person, score, opinion, comment, tags, thread_key, variant FROM feedback"
    )
    if store.startswith("sqlite:///"):
        with sqlite3.connect(store.removeprefix("sqlite:///")) as connection:
            connection.row_factory = sqlite3.Row
            return [dict(row) for row in connection.execute(sql)]
    connection = await asyncpg.connect(store)
    try:
        return [dict(row) for row in await connection.fetch(sql)]
    finally:
        await connection.close()


ALICE = ("k1", "alice")


async def test_a_stateless_answer_is_scored_by_its_owner_alone_and_counted_in_usage(
    serve: Serve, store_url: str, client: httpx.Client
) -> None:
    with fake_in_thread(answer()) as fake:
        url = serve(_config(fake.url, store_url))
        run = _ask(client, url, "bot", "c1", ALICE)
        wait_for_runs(url, 1)
    feedback = f"{url}/agents/bot/runs/{run['runId']}/feedback"
    given = client.post(feedback, json={"score": 1}, headers=headers(*ALICE))
    assert (given.status_code, given.json()["variant"]) == (201, run["variant"]), given.text
    changed = client.post(feedback, json={"score": -1, "comment": "wrong", "tags": ["facts"]}, headers=headers(*ALICE))
    assert changed.status_code == 200 and changed.json()["prompt_version"] == run["promptVersion"]
    # Another person of the same key, another key, the admin, another agent, a respelled id: the same 404.
    refused = [
        client.post(feedback, json={"score": 1}, headers=headers("k1", "bob")),
        client.post(feedback, json={"score": 1}, headers=headers("k2")),
        client.post(feedback, json={"score": 1}, headers=headers("admin")),
        client.post(feedback.replace("/bot/", "/stars/"), json={"score": 5}, headers=headers(*ALICE)),
        client.post(feedback.replace(run["runId"], run["runId"].upper()), json={"score": 1}, headers=headers(*ALICE)),
        client.delete(feedback, headers=headers("k1", "bob")),
    ]
    assert [(r.status_code, r.json()["error"]["code"]) for r in refused] == [(404, "unknown_answer")] * 6
    rows = await _rows(store_url)
    assert [(r["person"], r["score"], r["opinion"], r["comment"], r["variant"]) for r in rows] == [
        ("alice", -1, -1, "wrong", run["variant"])
    ]
    usage = client.get(f"{url}/usage", params={"group_by": "variant"}, headers=headers("admin")).json()["rows"]
    assert [(r["variant"], r["feedback"], r["mean_score"], r["positive_share"]) for r in usage] == [
        (run["variant"], 1, -1.0, 0.0)
    ]
    assert client.delete(feedback, headers=headers(*ALICE)).status_code == 204
    assert client.delete(feedback, headers=headers(*ALICE)).status_code == 404
    assert await _rows(store_url) == []


async def test_a_stored_answer_is_scored_in_its_thread_and_its_feedback_goes_with_the_thread(
    serve: Serve, store_url: str, client: httpx.Client
) -> None:
    with fake_in_thread(answer()) as fake:
        url = serve(_config(fake.url, store_url))
        _ask(client, url, "kept", "t1", ALICE)
    thread = f"{url}/agents/kept/threads/t1"
    messages = client.get(f"{thread}/messages", headers=headers(*ALICE)).json()["messages"]
    user, assistant = (next(m["id"] for m in messages if m["role"] == role) for role in ("user", "assistant"))
    on = f"{thread}/messages/{assistant}/feedback"
    given = client.post(on, json={"score": 1, "comment": "great"}, headers=headers(*ALICE))
    assert given.status_code == 201, given.text
    assert given.json()["variant"] in VARIANTS and given.json()["message_id"] == assistant
    # The stored answer names its run and the prompt it answered under.
    (stored,) = await _rows(store_url, "SELECT body FROM messages WHERE role = 'assistant'")
    noted = json.loads(stored["body"])["metadata"]
    assert noted["runId"] == given.json()["run_id"] and noted["prompt"]["variant"] == given.json()["variant"]
    assert set(noted["prompt"]) == {"version", "hash", "variant"}
    refused = [
        client.post(on, json={"score": 1}, headers=headers("k1", "bob")),  # not bob's thread
        client.post(f"{thread}/messages/{user}/feedback", json={"score": 1}, headers=headers(*ALICE)),
        client.post(f"{thread}/messages/nope/feedback", json={"score": 1}, headers=headers(*ALICE)),
    ]
    assert [r.status_code for r in refused] == [404, 404, 404]
    assert [r["comment"] for r in await _rows(store_url)] == ["great"]
    assert client.delete(thread, headers=headers(*ALICE)).status_code == 204
    assert await _rows(store_url) == []  # the comment was the person's: gone with the thread


@pytest.mark.parametrize(
    ("agent", "body", "field"),
    [
        ("bot", {"score": 0}, "score"),
        ("bot", {"score": 5}, "score"),
        ("stars", {"score": -1}, "score"),
        ("bot", {"score": "1"}, "score"),
        ("bot", {"score": True}, "score"),
        ("bot", {"score": 1.5}, "score"),
        ("bot", {}, "score"),
        ("bot", {"score": 1, "comment": "x" * 2001}, "comment"),
        ("bot", {"score": 1, "comment": "a\x00b"}, "comment"),
        ("bot", {"score": 1, "tags": ["t"] * 11}, "tags"),
        ("bot", {"score": 1, "tags": [""]}, "tags.0"),
        ("bot", {"score": 1, "mood": "happy"}, "mood"),
    ],
)
def test_a_bad_body_is_a_422_naming_its_field(
    serve: Serve, tmp_path: Any, client: httpx.Client, agent: str, body: dict[str, Any], field: str
) -> None:
    with fake_in_thread(answer()) as fake:
        url = serve(_config(fake.url, f"sqlite:///{tmp_path}/s.db"))
        run = _ask(client, url, agent, "c1", ALICE)
        wait_for_runs(url, 1)
    response = client.post(f"{url}/agents/{agent}/runs/{run['runId']}/feedback", json=body, headers=headers(*ALICE))
    assert response.status_code == 422, response.text
    assert [d["field"] for d in response.json()["error"]["details"]][:1] == [field]


async def test_the_experiment_compares_the_variants_as_a_recomputation_from_the_tables_does(
    serve: Serve, store_url: str, client: httpx.Client
) -> None:
    with fake_in_thread(answer()) as fake:
        url = serve(_config(fake.url, store_url))
        runs = [_ask(client, url, "bot", "c", ("k1", f"p{i}")) | {"person": f"p{i}"} for i in range(40)]
        wait_for_runs(url, len(runs))
    for i, run in enumerate(runs):  # variant a's answers are liked 3 times in 4, b's once in 4; some say nothing
        liked = i % 4 != 0 if run["variant"] == "a" else i % 4 == 0
        if i % 5:
            feedback = f"{url}/agents/bot/runs/{run['runId']}/feedback"
            response = client.post(feedback, json={"score": 1 if liked else -1}, headers=headers("k1", run["person"]))
            assert response.status_code == 201, response.text
    body = client.get(f"{url}/agents/bot/experiment", headers=headers("admin")).json()
    # The same figures from the tables themselves.
    usage = await _rows(store_url, "SELECT run_id, variant FROM usage WHERE agent = 'bot'")
    scores = {row["run_id"]: row["score"] for row in await _rows(store_url)}
    tallies = {
        label: VariantTally(
            sum(1 for row in usage if row["variant"] == label),
            sum(1 for row in usage if row["variant"] == label and scores.get(row["run_id"]) == 1),
            sum(1 for row in usage if row["variant"] == label and scores.get(row["run_id"]) == -1),
        )
        for label in VARIANTS
    }
    expected = compare_variants(tallies)
    assert [(v["label"], v["runs"], v["positive"], v["negative"]) for v in body["variants"]] == [
        (label, t.runs, t.positive, t.negative) for label, t in sorted(tallies.items())
    ]
    assert [v["probability_best"] for v in body["variants"]] == [s.probability_best for s in expected.variants]
    assert (body["leader"], body["decided"], body["feedback_needed"]) == (
        expected.leader,
        expected.decided,
        expected.feedback_needed,
    )
    assert body["leader"] == "a" and [v["weight"] for v in body["variants"]] == [1, 1]
    refused = client.get(f"{url}/agents/bot/experiment", headers=headers("k1"))
    assert (refused.status_code, refused.json()["error"]["code"]) == (403, "forbidden")
    none = client.get(f"{url}/agents/plain/experiment", headers=headers("admin"))
    assert (none.status_code, none.json()["error"]["code"]) == (404, "no_variants")


def test_an_ag_ui_answer_is_scored_by_the_run_id_its_client_sent(
    serve: Serve, tmp_path: Any, client: httpx.Client
) -> None:
    with fake_in_thread(answer()) as fake:
        url = serve(_config(fake.url, f"sqlite:///{tmp_path}/s.db"))
        body = {"threadId": "t", "runId": "agui-run-1", "messages": [{"id": "u", "role": "user", "content": "hi"}]}
        events = client.post(f"{url}/agents/bot/ag-ui", json=body, headers=headers(*ALICE))
        assert '"RUN_FINISHED"' in events.text
        wait_for_runs(url, 1)
    given = client.post(f"{url}/agents/bot/runs/agui-run-1/feedback", json={"score": 1}, headers=headers(*ALICE))
    assert given.status_code == 201, given.text
    other = client.post(f"{url}/agents/bot/runs/agui-run-1/feedback", json={"score": 1}, headers=headers("k2"))
    assert other.status_code == 404

"""Budgets: checked before each model call, refused with 429 ``budget_exceeded``, shared through Redis.

Spend is what the fake upstream's answers report (120 tokens each); the fake counts the model calls
that actually reached it, so any overspend would show as one request too many.
"""

from __future__ import annotations

import json
import secrets
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest
from redis import Redis

from chatgate.config import Config
from tests.conftest import ChatgateProcess, make_config
from tests.providers.fakes import Reply, fake_in_thread, openai_chunk
from tests.providers.support import provider_table
from tests.providers.tool_calls_cut import RECORD_TOOL, arguments_for, openai_call, runs_of
from tests.usage.support import PRICING, answer, chat, chunks, headers, keys, wait_for_runs

Serve = Callable[[Config], str]


def _seconds_to_midnight() -> float:
    now = datetime.now(UTC)
    return (datetime(now.year, now.month, now.day, tzinfo=UTC) + timedelta(days=1) - now).total_seconds()


def _refused(response: httpx.Response, names: str) -> None:
    assert response.status_code == 429, response.text
    error = response.json()["error"]
    assert error["code"] == "budget_exceeded" and names in error["message"], error
    # Retry-After is the end of the calendar day (UTC) the budget counts.
    assert abs(int(response.headers["retry-after"]) - _seconds_to_midnight()) < 120


def _budgeted_key_config(path: Path, redis_url: str, upstream: str, key_id: str, secret: str, key: str) -> Path:
    """A config file: Redis, the fake upstream, agent ``bot``, and one key whose last lines are ``key``."""
    path.write_text(
        f'[server]\nredis_url = "{redis_url}"\n\n'
        f'[providers.up]\nkind = "openai"\nbase_url = "{upstream}"\napi_key = "sk-test"\nretries = 0\n\n'
        '[agents.bot]\nmodel = "up:model-x"\n\n'
        f'[[keys]]\nid = "{key_id}"\nkey = "{secret}"\n{key}'
    )
    return path


HI = {"id": "c", "messages": [{"id": "u1", "role": "user", "parts": [{"type": "text", "text": "Hi"}]}]}


def test_a_tiny_key_budget_is_spent_then_refused_on_both_replicas(
    chatgate_process: ChatgateProcess, redis_url: str, tmp_path: Path
) -> None:
    key_id = f"k-{secrets.token_hex(4)}"  # the session's Redis is shared: a budget no other test counts
    secret = "budget-secret-0123456789"
    with fake_in_thread(answer()) as fake:
        budget = "budget = { tokens_per_day = 150 }\n"
        config = _budgeted_key_config(tmp_path / "chatgate.toml", redis_url, fake.url, key_id, secret, budget)
        (url_a, _), (url_b, _) = chatgate_process("--config", str(config)), chatgate_process("--config", str(config))
        auth = {"authorization": f"Bearer {secret}"}

        def ask(url: str) -> httpx.Response:
            return httpx.post(f"{url}/agents/bot/chat", json=HI, headers=auth, timeout=30)

        # 0 < 150: answered (120 spent); 120 < 150 on the other replica: answered (240 spent).
        assert [ask(url_a).status_code, ask(url_b).status_code] == [200, 200]
        refusals = [ask(url_a), ask(url_b), ask(url_a)]
    for refusal in refusals:
        _refused(refusal, f"key {key_id!r} budget of 150 tokens per day")
    # Two answers reached the upstream: the budget was overspent by one answer, never more.
    assert len(fake.requests) == 2


def test_with_stream_slots_in_redis_the_budget_is_read_with_the_slot_and_a_refusal_frees_it(
    chatgate_process: ChatgateProcess, redis_url: str, tmp_path: Path
) -> None:
    key_id = f"k-{secrets.token_hex(4)}"
    secret = "budget-slot-secret-0123456789"
    redis = Redis.from_url(redis_url)

    def mgets() -> int:
        return int(redis.info("commandstats").get("cmdstat_mget", {}).get("calls", 0))

    with fake_in_thread(answer()) as fake:
        budget = "max_concurrent_streams = 1\nbudget = { tokens_per_day = 150 }\n"
        config = _budgeted_key_config(tmp_path / "chatgate.toml", redis_url, fake.url, key_id, secret, budget)
        url, _ = chatgate_process("--config", str(config))
        auth = {"authorization": f"Bearer {secret}"}
        before = mgets()
        answered = [httpx.post(f"{url}/agents/bot/chat", json=HI, headers=auth, timeout=30) for _ in range(2)]
        refused = httpx.post(f"{url}/agents/bot/chat", json=HI, headers=auth, timeout=30)
        read_alone = mgets() - before
    assert [r.status_code for r in answered] == [200, 200]
    _refused(refused, f"key {key_id!r} budget of 150 tokens per day")  # the budget's refusal, not the slot's
    assert len(fake.requests) == 2
    assert read_alone == 0  # the budget was read by the script that takes the stream slot, never on its own
    assert redis.zcard(f"chatgate:streams:{key_id}") == 0  # the slot the refused request took went back
    redis.close()


def test_a_budgeted_run_gives_its_slot_back_with_its_spend_and_a_cut_off_run_still_frees_its_slot(
    chatgate_process: ChatgateProcess, redis_url: str, tmp_path: Path
) -> None:
    key_id = f"k-{secrets.token_hex(4)}"
    secret = "budget-fold-secret-0123456789"
    redis = Redis.from_url(redis_url)
    slots = f"chatgate:streams:{key_id}"
    silent = Reply([openai_chunk({"content": "Hel"})], ending="silent")  # streams a word, then waits
    with fake_in_thread(answer(), answer(), answer(), silent) as fake:
        budget = "max_concurrent_streams = 2\nbudget = { tokens_per_day = 100000 }\n"
        config = _budgeted_key_config(tmp_path / "chatgate.toml", redis_url, fake.url, key_id, secret, budget)
        url, _ = chatgate_process("--config", str(config))
        auth = {"authorization": f"Bearer {secret}"}

        def ask() -> None:
            assert httpx.post(f"{url}/agents/bot/chat", json=HI, headers=auth, timeout=30).status_code == 200

        ask()  # loads the scripts into Redis (EVALSHA, then SCRIPT LOAD and EVALSHA again)
        with _commands_naming(redis_url, key_id) as sent:
            ask()
            ask()
        # Each run: the script taking the slot (and reading the budget), the one counting its spend and
        # giving the slot back. No ZREM of its own after the last byte.
        assert sent == ["EVALSHA"] * 4
        assert redis.zcard(slots) == 0
        assert int(redis.get(f"chatgate:spend:key:{key_id}:{datetime.now(UTC):%Y-%m-%d}:tokens") or 0) == 360

        # Cut off mid-answer, before any spend: the slot goes back the usual way, after the stream, and
        # the run's reservation is settled (nothing counted: the call reported no usage).
        with httpx.stream("POST", f"{url}/agents/bot/chat", json=HI, headers=auth, timeout=30) as response:
            for line in response.iter_lines():
                if "text-delta" in line:
                    assert redis.zcard(slots) == 1
                    break
        deadline = time.monotonic() + 15
        while redis.zcard(slots) or redis.zcard(f"chatgate:holds:key:{key_id}"):
            assert time.monotonic() < deadline, "the cut-off run's slot or reservation was never given back"
            time.sleep(0.02)
    assert len(fake.requests) == 4
    redis.close()


@contextmanager
def _commands_naming(redis_url: str, word: str) -> Iterator[list[str]]:
    """The names of the commands clients (not scripts) sent to Redis naming ``word`` in the block (MONITOR)."""
    sent: list[str] = []
    end = f"end-{secrets.token_hex(4)}"
    with Redis.from_url(redis_url).monitor() as monitor:

        def listen() -> None:
            for command in monitor.listen():
                if end in command["command"]:
                    return
                if command["client_type"] != "lua" and word in command["command"]:
                    sent.append(command["command"].split(" ", 1)[0].upper())

        listening = threading.Thread(target=listen, daemon=True)
        listening.start()
        yield sent
        with Redis.from_url(redis_url) as client:
            client.echo(end)  # MONITOR shows commands in the order Redis ran them: the block's come before
        listening.join(15)
        assert not listening.is_alive()


def test_the_agent_budget_lets_the_current_answer_finish_and_refuses_the_next_call_in_protocol(
    serve: Serve, tmp_path: Path
) -> None:
    target = tmp_path / "ran.txt"
    with fake_in_thread(openai_call(arguments_for(target), "tool_calls"), answer()) as fake:
        config = make_config(
            {"bot": {"model": "up:model-x", "tools": RECORD_TOOL, "budget": {"tokens_per_day": 10}}},
            providers={"up": provider_table("openai", fake.url)},
            keys=keys(),
        )
        url = serve(config)
        first = chat(url, "k2")
        second = chat(url, "k1", "alice")
    # The first call (46 tokens) was under budget when it began: it finished, its tool ran, and the
    # step after it was refused inside the stream, which ends as useChat's own error.
    assert first.status_code == 200
    parts = chunks(first)
    assert [part["type"] for part in parts][-3:] == ["error", "finish-step", "finish"]
    assert "agent 'bot' budget of 10 tokens per day is spent" in parts[-3]["errorText"]
    assert runs_of(target) == 1
    # Every caller of the agent is now refused before the stream starts.
    _refused(second, "agent 'bot' budget")
    assert len(fake.requests) == 1


def test_a_usd_budget_counts_the_priced_cost_and_a_person_budget_comes_from_the_hook(serve: Serve) -> None:
    from chatgate.caller import Caller
    from chatgate.config import Budget
    from chatgate.web.app import create_app
    from tests.conftest import LiveServer

    # $0.0001 a day per person: one answer costs $0.000104 (tests/usage/support.py), so one each.
    def person_budget(caller: Caller) -> Budget | None:
        return Budget(usd_per_day=0.0001) if caller.user else None

    with fake_in_thread(answer()) as fake:
        config = make_config(
            {"bot": {"model": "up:model-x"}},
            providers={"up": provider_table("openai", fake.url)},
            keys=keys(),
            pricing=PRICING,
        )
        server = LiveServer(create_app(config, person_budget=person_budget))
        server.start()
        try:
            url = server.url
            results: list[Any] = [chat(url, "k1", "alice").status_code, chat(url, "k1", "bob").status_code]
            alice_again = chat(url, "k1", "alice")
            results.append(chat(url, "k2").status_code)  # a key with no person and no budget
        finally:
            server.stop()
    assert results == [200, 200, 200]
    _refused(alice_again, "person 'alice' budget of $0.0001 per day")
    assert len(fake.requests) == 3


def test_a_budget_with_no_limit_is_a_config_error() -> None:
    from chatgate.errors import ConfigError

    with pytest.raises(ConfigError, match="tokens_per_day, usd_per_day or usd_per_month"):
        make_config({"bot": {"model": "builtin:echo", "budget": {}}})


def test_budgets_without_redis_are_warned_per_process_when_serving_several_workers(
    caplog: Any,
) -> None:
    from chatgate.serve.cli import warn_budgets_per_process

    config = make_config({"bot": {"model": "builtin:echo", "budget": {"usd_per_day": 100}}}, keys=keys())
    warn_budgets_per_process(config, 4)
    assert "BUDGETS ARE PER PROCESS: agent 'bot'" in caplog.text and "up to 4x" in caplog.text
    caplog.clear()
    warn_budgets_per_process(make_config({"bot": {"model": "builtin:echo"}}), 4)
    assert caplog.text == ""


def test_a_server_held_thread_is_budgeted_and_recorded_with_its_thread(serve: Serve, tmp_path: Path) -> None:
    with fake_in_thread(answer()) as fake:
        config = make_config(
            {"bot": {"model": "up:model-x", "conversations": "server", "budget": {"tokens_per_day": 10}}},
            providers={"up": provider_table("openai", fake.url)},
            keys=keys(),
            store={"url": f"sqlite:///{tmp_path / 'threads.db'}"},
        )
        url = serve(config)
        first = chat(url, "k1", "alice")
        second = chat(url, "k1", "alice")
    assert first.status_code == 200 and chunks(first)[-1]["messageMetadata"]["usage"]["totalTokens"] == 120
    _refused(second, "agent 'bot' budget of 10 tokens per day")
    assert len(fake.requests) == 1
    wait_for_runs(url, 1)
    import sqlite3

    with sqlite3.connect(tmp_path / "threads.db") as db:
        rows = db.execute("SELECT key_id, person, agent, thread_id, input_tokens, output_tokens FROM usage").fetchall()
    assert rows == [("k1", "alice", "bot", "chat-1", 100, 20)]


def test_a_table_priced_model_spends_a_month_budget_and_ag_ui_shows_the_runs_cost(serve: Serve) -> None:
    from genai_prices import Usage as PriceUsage
    from genai_prices import calc_price

    # gpt-4o-mini has no [pricing] table here: genai-prices prices it. One answer costs $0.000024.
    expected = float(
        calc_price(
            PriceUsage(input_tokens=100, output_tokens=20, cache_read_tokens=40),
            model_ref="gpt-4o-mini",
            provider_id="openai",
        ).total_price
    )
    with fake_in_thread(answer(), answer()) as fake:
        config = make_config(
            {"bot": {"model": "up:gpt-4o-mini", "budget": {"usd_per_month": 0.00002}}},
            providers={"up": provider_table("openai", fake.url)},
            keys=keys(),
        )
        url = serve(config)
        body = {"threadId": "t", "runId": "r", "messages": [{"id": "u1", "role": "user", "content": "Hi"}]}
        first = httpx.post(f"{url}/agents/bot/ag-ui", json=body, headers=headers("k2"), timeout=30)
        second = httpx.post(f"{url}/agents/bot/ag-ui", json=body, headers=headers("k2"), timeout=30)
    assert first.status_code == 200
    finished = json.loads(next(line for line in first.text.splitlines() if "RUN_FINISHED" in line)[len("data: ") :])
    (usage,) = finished["usage"]
    assert expected > 0 and usage["costUsd"] == pytest.approx(expected)
    assert (usage["model"], usage["totalTokens"]) == ("gpt-4o-mini", 120)
    # $0.000024 of $0.00002 a month is spent: refused until the first of next month (UTC).
    assert second.status_code == 429, second.text
    error = second.json()["error"]
    assert error["code"] == "budget_exceeded" and "agent 'bot' budget of $2e-05 per month" in error["message"]
    now = datetime.now(UTC)
    next_month = datetime(now.year + now.month // 12, now.month % 12 + 1, 1, tzinfo=UTC)
    assert abs(int(second.headers["retry-after"]) - (next_month - now).total_seconds()) < 120
    assert len(fake.requests) == 1

"""The ThreadStore rules, the same on SQLite and PostgreSQL: runs, turns, system messages, approvals."""

from __future__ import annotations

import asyncio
from dataclasses import replace
from pathlib import Path

import pytest

from chatgate.history import AssistantMessage, TextPart, UserMessage
from chatgate.store import NewMessage, StoredSummary, SystemState, ThreadBusy, open_store
from chatgate.store.schema import MIGRATIONS
from chatgate.store.sql import STALLED_RUNS, SqlThreadStore


def _user(text: str, message_id: str = "u1") -> NewMessage:
    return NewMessage(UserMessage((TextPart(text),), id=f"srv_{message_id}"), client_id=message_id)


async def _store(url: str) -> SqlThreadStore:
    return await open_store(url, Path.cwd())


async def test_a_run_commits_the_user_turn_then_saves_the_answer(store_url: str) -> None:
    store = await _store(store_url)
    try:
        thread = await store.begin_run("k", "a", "t1", "run1", revision=0, append=[_user("hello")])
        stored = await store.messages(thread)
        assert [(m.public_id, m.status) for m in stored] == [("u1", "complete")]
        answer = AssistantMessage((TextPart("hi there"),), id="msg_a")
        await store.checkpoint([(thread, "run1", [AssistantMessage((TextPart("hi"),), id="msg_a")])])
        assert [m.status for m in await store.messages(thread)] == ["complete", "partial"]
        await store.finish_run(thread, "run1", [answer], "complete")
        stored = await store.messages(thread)
        assert [(m.message, m.status) for m in stored][1] == (answer, "complete")
        assert len(stored) == 2
        info = await store.get_thread("k", "a", "t1")
        assert info is not None and info.active_run is None and info.revision == 2
    finally:
        await store.close()


async def test_a_run_never_checkpointed_saves_its_answer_without_clearing_a_copy(store_url: str) -> None:
    store = await _store(store_url)
    try:
        thread = await store.begin_run("k", "a", "t1", "run1", revision=0, append=[_user("hello")])
        answer = AssistantMessage((TextPart("hi there"),), id="msg_a")
        await store.finish_run(thread, "run1", [answer], "complete", checkpointed=False)
        stored = await store.messages(thread)
        assert [(m.message, m.status, m.run_id) for m in stored[1:]] == [(answer, "complete", None)]
        info = await store.get_thread("k", "a", "t1")
        assert info is not None and info.active_run is None
    finally:
        await store.close()


async def test_a_second_turn_follows_the_first_on_the_same_thread(store_url: str) -> None:
    store = await _store(store_url)
    try:
        first = await store.begin_run("k", "a", "t1", "run1", revision=0, append=[_user("one")])
        await store.finish_run(first, "run1", [AssistantMessage((TextPart("1"),), id="a1")], "complete")
        known = await store.get_thread("k", "a", "t1")
        assert known is not None and known.active_run is None
        second = await store.begin_run(
            "k", "a", "t1", "run2", revision=known.revision, append=[_user("two", "u2")], dead_run=False
        )
        assert second.key == first.key and second.active_run == "run2" and second.revision == known.revision + 1
        await store.finish_run(second, "run2", [AssistantMessage((TextPart("2"),), id="a2")], "complete")
        stored = await store.messages(second)
        assert [(m.message.id, m.status, m.run_id) for m in stored] == [
            ("srv_u1", "complete", None),
            ("a1", "complete", None),
            ("srv_u2", "complete", None),
            ("a2", "complete", None),
        ]
    finally:
        await store.close()


async def test_migrations_apply_once(store_url: str) -> None:
    first = await _store(store_url)
    await first.close()
    second = await _store(store_url)
    try:
        assert await second.migrate() == len(MIGRATIONS)
    finally:
        await second.close()


async def test_approvals_claimed_before_they_were_scoped_by_thread_are_kept(
    store_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("chatgate.store.sql.MIGRATIONS", MIGRATIONS[:1])  # a store from before version 2
    old = await _store(store_url)
    async with old._engine.transaction() as tx:  # as version 1 wrote them (today's code writes later columns)
        await tx.execute(
            "INSERT INTO threads (key, owner, agent, id, created_at, updated_at) VALUES ('thr_1', 'k', 'a', 't1', 1, 1)"
        )
        await tx.execute(
            "INSERT INTO approvals (approval_id, thread_key, claimed_at, outcome) VALUES ($1, $2, 1, $3)",
            "apr_1",
            "thr_1",
            '{"ok": true}',
        )
    await old.close()
    monkeypatch.undo()
    store = await _store(store_url)
    try:
        thread = await store.get_thread("k", "a", "t1")
        assert thread is not None and thread.last_client_run is None  # migration 6 on a version-1 row
        assert await store.settled_approval("apr_1", thread) == '{"ok": true}'
        assert not await store.claim_approval("apr_1", thread)
    finally:
        await store.close()


async def test_one_running_run_per_thread(store_url: str) -> None:
    store = await _store(store_url)
    try:
        thread = await store.begin_run("k", "a", "t1", "run1", revision=0)
        with pytest.raises(ThreadBusy):
            await store.begin_run("k", "a", "t1", "run2", revision=thread.revision)
        with pytest.raises(ThreadBusy):
            await store.reset("k", "a", "t1", None, by=None, revision=None)
        await store.finish_run(thread, "run1", [], "complete")
        again = await store.get_thread("k", "a", "t1")
        assert again is not None
        await store.begin_run("k", "a", "t1", "run2", revision=again.revision)
    finally:
        await store.close()


async def test_racing_runs_exactly_one_wins(store_url: str) -> None:
    stores = [await _store(store_url) for _ in range(2)]  # two "replicas"
    try:
        results = await asyncio.gather(
            *(s.begin_run("k", "a", "t1", f"run{i}", revision=0) for i, s in enumerate(stores)),
            return_exceptions=True,
        )
        assert sorted(type(result).__name__ for result in results) == ["ThreadBusy", "ThreadInfo"]
    finally:
        for store in stores:
            await store.close()


async def test_a_stale_revision_is_refused(store_url: str) -> None:
    store = await _store(store_url)
    try:
        thread = await store.begin_run("k", "a", "t1", "run1", revision=0)
        await store.finish_run(thread, "run1", [], "complete")
        with pytest.raises(ThreadBusy):
            await store.begin_run("k", "a", "t1", "run2", revision=thread.revision)  # read before the finish
        with pytest.raises(ThreadBusy):
            await store.set_system("k", "a", "t1", SystemState("text", "x"), by=None, revision=0)
    finally:
        await store.close()


async def test_owners_never_see_each_others_threads(store_url: str) -> None:
    store = await _store(store_url)
    try:
        await store.begin_run("alice", "a", "t1", "run1", revision=0, append=[_user("secret")])
        assert await store.get_thread("bob", "a", "t1") is None
        assert await store.list_threads("bob", "a") == []
        assert not await store.delete("bob", "a", "t1")
        [summary] = await store.list_threads("alice", "a")
        assert (summary.id, summary.title) == ("t1", "secret")
    finally:
        await store.close()


async def test_system_message_seed_swap_reset_are_audited(store_url: str) -> None:
    store = await _store(store_url)
    try:
        seeded = await store.set_system("k", "a", "t1", SystemState("prompt", "pirate"), by="key1", revision=None)
        assert seeded.system == SystemState("prompt", "pirate")
        thread = await store.begin_run("k", "a", "t1", "run1", revision=seeded.revision, append=[_user("hi")])
        await store.finish_run(thread, "run1", [AssistantMessage((TextPart("arr"),), id="m")], "complete")
        swapped = await store.set_system("k", "a", "t1", SystemState("text", "be brief"), by="admin", revision=None)
        assert len(await store.messages(swapped)) == 2  # history kept
        kept = await store.reset("k", "a", "t1", None, by="key1", revision=None)
        assert kept.system == SystemState("text", "be brief") and await store.messages(kept) == []
        cleared = await store.reset("k", "a", "t1", SystemState(), by="key1", revision=None)
        assert cleared.system == SystemState()
        audit = await store.audit(cleared)
        assert [(e.action, e.system.kind, e.by) for e in audit] == [
            ("seed", "prompt", "key1"),
            ("swap", "text", "admin"),
            ("reset", "text", "key1"),
            ("reset", "agent", "key1"),
        ]
    finally:
        await store.close()


async def test_a_dead_run_stops_blocking_and_keeps_its_partial_turn(store_url: str) -> None:
    store = await _store(store_url)
    try:
        thread = await store.begin_run("k", "a", "t1", "run1", revision=0, append=[_user("hi")])
        await store.checkpoint([(thread, "run1", [AssistantMessage((TextPart("half"),), id="m")])])
        # The process died: nothing refreshes the heartbeat. Make it look old enough.
        import chatgate.store.sql as sql

        original = sql.STALE_RUN_SECONDS
        sql.STALE_RUN_SECONDS = -1.0
        try:
            taken = await store.begin_run("k", "a", "t1", "run2", revision=thread.revision + 0)
        finally:
            sql.STALE_RUN_SECONDS = original
        await store.finish_run(taken, "run2", [AssistantMessage((TextPart("whole"),), id="m2")], "complete")
        await store.finish_run(thread, "run1", [AssistantMessage((TextPart("late"),), id="m3")], "complete")
        stored = await store.messages(taken)
        assert [(m.message.id, m.status) for m in stored] == [
            ("srv_u1", "complete"),
            ("m", "partial"),
            ("m2", "complete"),
        ]
    finally:
        await store.close()


async def test_an_approval_is_claimed_once(store_url: str) -> None:
    stores = [await _store(store_url) for _ in range(2)]
    try:
        thread = await stores[0].begin_run("k", "a", "t1", "run1", revision=0)
        claims = await asyncio.gather(*(s.claim_approval("apr_1", thread) for s in stores for _ in range(3)))
        assert sorted(claims) == [False] * 5 + [True]
        assert await stores[1].settled_approval("apr_1", thread) is None
        await stores[0].settle_approval("apr_1", thread, '{"ok": true}')
        assert await stores[1].settled_approval("apr_1", thread) == '{"ok": true}'
        # Another owner's thread (or another agent's) claims the same token as its own row, never reading this one.
        for owner, agent in (("k2", "a"), ("k", "b")):
            foreign = await stores[1].begin_run(owner, agent, "t1", "run2", revision=0)
            assert await stores[1].settled_approval("apr_1", foreign) is None
            assert await stores[1].claim_approval("apr_1", foreign)
            assert not await stores[0].claim_approval("apr_1", foreign)
            assert await stores[1].settled_approval("apr_1", foreign) is None
        assert await stores[0].settled_approval("apr_1", thread) == '{"ok": true}'
    finally:
        for store in stores:
            await store.close()


async def test_a_read_never_sees_a_checkpoint_half_written(store_url: str) -> None:
    # A read runs with no transaction of its own; on SQLite's one shared connection it must still wait
    # for a transaction in progress, which deletes the run's rows before writing them again.
    store = await _store(store_url)
    try:
        thread = await store.begin_run("k", "a", "t1", "run1", revision=0, append=[_user("hello")])
        answer = [AssistantMessage((TextPart("so far"),), id="msg_a")]
        await store.checkpoint([(thread, "run1", answer)])
        seen: list[int] = []

        async def read_often() -> None:
            for _ in range(60):
                seen.append(len(await store.messages(thread)))
                await asyncio.sleep(0)

        reader = asyncio.create_task(read_often())
        for _ in range(30):
            await store.checkpoint([(thread, "run1", answer)])
        await reader
        assert set(seen) == {2}
        assert [m.seq for m in await store.messages(thread)] == [0, 1]
    finally:
        await store.close()


async def test_one_checkpoint_saves_every_running_turn_and_skips_a_run_that_ended(store_url: str) -> None:
    store = await _store(store_url)
    try:
        first = await store.begin_run("k", "a", "t1", "run1", revision=0, append=[_user("one")])
        second = await store.begin_run("k", "a", "t2", "run2", revision=0, append=[_user("two")])
        done = AssistantMessage((TextPart("two, done"),), id="m2")
        await store.finish_run(second, "run2", [done], "complete")
        await store.checkpoint(
            [
                (first, "run1", [AssistantMessage((TextPart("one so far"),), id="m1")]),
                (second, "run2", [AssistantMessage((TextPart("two so"),), id="m2")]),  # too late: it ended
            ]
        )
        assert [(m.message.id, m.status) for m in await store.messages(first)][1] == ("m1", "partial")
        assert [(m.message, m.status) for m in await store.messages(second)][1] == (done, "complete")
    finally:
        await store.close()


async def test_a_checkpoint_racing_the_finish_never_leaves_the_turn_twice(store_url: str) -> None:
    """Whichever commits first, a turn ends as the final answer alone: no partial copy beside it."""
    stores = [await _store(store_url) for _ in range(2)]
    try:
        for n in range(12):
            thread = await stores[0].begin_run("k", "a", f"t{n}", f"run{n}", revision=0, append=[_user("hi")])
            partial = [AssistantMessage((TextPart("so far"),), id="m")]
            final = AssistantMessage((TextPart("so far and done"),), id="m")
            racers = [
                stores[1].checkpoint([(thread, f"run{n}", partial)]),
                stores[0].finish_run(thread, f"run{n}", [final], "complete"),
            ]
            await asyncio.gather(*(racers if n % 2 else racers[::-1]))
            stored = await stores[0].messages(thread)
            assert [(m.message, m.status, m.run_id) for m in stored[1:]] == [(final, "complete", None)]
    finally:
        for store in stores:
            await store.close()


async def test_an_sqlite_too_old_for_the_store_is_refused_at_open(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import chatgate.store.sqlite as engine

    monkeypatch.setattr(engine.sqlite3, "sqlite_version_info", (3, 31, 1))
    monkeypatch.setattr(engine.sqlite3, "sqlite_version", "3.31.1")
    with pytest.raises(RuntimeError, match=r"SQLite 3\.35\.0 or later.* has 3\.31\.1"):
        await open_store(f"sqlite:///{tmp_path}/old.db", tmp_path)
    assert not (tmp_path / "old.db").exists()


async def test_a_summary_is_kept_by_the_run_holding_the_thread_and_goes_with_what_it_covers(store_url: str) -> None:
    store = await _store(store_url)
    try:
        thread = await store.begin_run("k", "a", "t1", "run1", revision=0, append=[_user("one")])
        await store.finish_run(thread, "run1", [AssistantMessage((TextPart("1"),), id="a1")], "complete")
        taken = await store.begin_run("k", "a", "t1", "run2", revision=2, append=[_user("two", "u2")], dead_run=False)
        summary = StoredSummary("They said one.", "a1", 1, 2, 5, "up:m", 1.5)
        assert not await store.save_context_summary(taken, "run1", summary)  # run1 no longer holds it
        assert await store.context_summary(taken) is None
        assert await store.save_context_summary(taken, "run2", summary)
        assert await store.save_context_summary(taken, "run2", replace(summary, text="Again."))  # replaced
        assert await store.context_summary(taken) == replace(summary, text="Again.")
        await store.finish_run(taken, "run2", [AssistantMessage((TextPart("2"),), id="a2")], "complete")
        # A regenerate from after what it covers keeps it; from within, drops it.
        kept = await store.begin_run("k", "a", "t1", "run3", revision=4, drop_from_seq=3, dead_run=False)
        assert await store.context_summary(kept) is not None
        await store.finish_run(kept, "run3", [], "complete")
        dropped = await store.begin_run("k", "a", "t1", "run4", revision=6, drop_from_seq=1, dead_run=False)
        assert await store.context_summary(dropped) is None
        assert await store.save_context_summary(dropped, "run4", summary)
        await store.finish_run(dropped, "run4", [], "complete")
        reset = await store.reset("k", "a", "t1", None, by=None, revision=None)
        assert await store.context_summary(reset) is None
    finally:
        await store.close()


async def test_the_recovery_sweep_finds_running_threads_through_their_heartbeat_index(store_url: str) -> None:
    # Migration 7's partial index; PostgreSQL's planner is told to avoid a scan if it can, as it would on a
    # big table (on a tiny one a scan is cheaper). Before migration 7 both engines scanned threads.
    store = await _store(store_url)
    try:
        await store.begin_run("k", "a", "t1", "run1", revision=0, append=[_user("one")])
        idle = await store.begin_run("k", "a", "t2", "run2", revision=0, append=[_user("two")])
        await store.finish_run(idle, "run2", [AssistantMessage((TextPart("2"),), id="a2")], "complete")
        async with store.engine.transaction() as tx:
            if store_url.startswith("sqlite"):
                rows = await tx.fetch(f"EXPLAIN QUERY PLAN {STALLED_RUNS}", 1e12, 100)
                plan = " ".join(str(row["detail"]) for row in rows)
            else:
                await tx.execute("SET LOCAL enable_seqscan = off")
                rows = await tx.fetch(f"EXPLAIN {STALLED_RUNS}", 1e12, 100)
                plan = " ".join(str(row["QUERY PLAN"]) for row in rows)
        assert "threads_by_heartbeat" in plan, plan
        assert [thread.id for thread in await store.stalled_runs(1e12)] == ["t1"]
    finally:
        await store.close()


async def test_an_archived_thread_keeps_everything_and_lists_only_when_asked(store_url: str) -> None:
    store = await _store(store_url)
    try:
        thread = await store.begin_run("k", "a", "t1", "run1", revision=0, append=[_user("hello")])
        await store.finish_run(thread, "run1", [], "complete")
        await store.begin_run("k", "a", "t2", "run2", revision=0, append=[_user("other")])
        assert await store.set_archived(thread, True) and await store.set_archived(thread, True)
        archived = await store.get_thread("k", "a", "t1")
        assert archived is not None and archived.archived
        assert [t.id for t in await store.list_threads("k", "a", archived=False)] == ["t2"]
        assert {t.id: t.archived for t in await store.list_threads("k", "a")} == {"t1": True, "t2": False}
        assert [m.public_id for m in await store.messages(thread)] == ["u1"]
        assert await store.set_archived(thread, False)
        assert [t.id for t in await store.list_threads("k", "a", archived=False)] == ["t2", "t1"]
        assert await store.delete("k", "a", "t1") and not await store.set_archived(thread, True)
    finally:
        await store.close()

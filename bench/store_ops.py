"""CPU per store operation and per run-log flush, on a real SQLite file, PostgreSQL and Redis.

    .venv/bin/python bench/store_ops.py [--repeat 400] [--rounds 4]

What a stored turn pays beside its tokens, one operation at a time, in this process (uvloop, as
``chatgate serve`` runs; the CPU of aiosqlite's thread counts, PostgreSQL's and Redis's own does not):

- a turn, ``begin_run`` (the user's message committed, the thread taken) then ``finish_run`` (the
  reply saved, the thread released), on a new thread and on one that already has turns;
- ``get_thread`` (a lone query) and ``checkpoint`` (a 200-word partial turn rewritten, the heartbeat
  refreshed) of one run and of ten runs at once (one transaction) on ``SqlThreadStore`` over SQLite and
  over PostgreSQL;
- a run's log opened and ended in Redis (``RedisRunLog.create``, one frame, the writer's ``close``);
- one flush of the Redis run log (``RedisRunLog``'s script: every running run's new frames in one call)
  for 1 and for 10 runs, beside what the same writes cost as a redis-py pipeline of one ``XADD`` per run.

The best of ``--rounds`` rounds of ``--repeat`` calls each is reported, in µs of CPU per call. PostgreSQL
and Redis are started on loopback and stopped (tests/servers.py). A benchmark, not a test.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

import redis.asyncio as redis
import uvloop
from harness import ROOT
from setups import children_quiet

from chatgate.history import AssistantMessage, TextPart, UserMessage
from chatgate.runlog.redis import _FLUSH, RedisRunLog
from chatgate.store import NewMessage, ThreadStore, open_store

sys.path.insert(0, str(ROOT))  # tests/servers.py: the real Redis and PostgreSQL the tests use
from tests.servers import running_postgres, running_redis

FRAME = b'data: {"type":"TEXT_MESSAGE_CONTENT","messageId":"msg_1","delta":"word "}\n\n'


async def best_of(call: Callable[[], Awaitable[object]], repeat: int, rounds: int) -> float:
    """The least CPU per call, in µs, over ``rounds`` rounds of ``repeat`` calls."""
    best = float("inf")
    for _ in range(rounds):
        started = time.process_time()
        for _ in range(repeat):
            await call()
        best = min(best, (time.process_time() - started) / repeat * 1e6)
    return best


class Turns:
    """Whole turns on ``store``: each on a new thread, or each on the same thread after the one before."""

    def __init__(self, store: ThreadStore) -> None:
        self._store = store
        self._count = 0
        self._revision = 0
        self._ask = [NewMessage(UserMessage((TextPart("hello there"),), id="u1"), "u1")]
        self._reply = [AssistantMessage((TextPart("word " * 200),), id="msg_1")]

    async def new_thread(self) -> None:
        self._count += 1
        await self._turn(f"new{self._count}", 0)

    async def same_thread(self) -> None:
        self._revision = await self._turn("same", self._revision)

    async def _turn(self, thread_id: str, revision: int) -> int:
        self._count += 1
        run_id = f"turn{self._count}"
        # The thread as read had no run (the last one finished), as open_thread_turn tells the store.
        thread = await self._store.begin_run(
            "owner", "agent", thread_id, run_id, revision=revision, append=self._ask, dead_run=False
        )
        # A run shorter than a checkpoint's interval, as most are: no partial copy to clear.
        await self._store.finish_run(thread, run_id, self._reply, "complete", checkpointed=False)
        return thread.revision + 1


async def store_ops(url: str, repeat: int, rounds: int) -> dict[str, float]:
    """A turn, ``get_thread`` and ``checkpoint`` on the store at ``url``."""
    store = await open_store(url, Path(tempfile.mkdtemp()))
    try:
        turns = Turns(store)
        turn = [AssistantMessage((TextPart("word " * 200),), id="msg_1")]
        running = [
            (await store.begin_run("owner", "agent", f"t{n}", f"run{n}", revision=0), f"run{n}", turn)
            for n in range(10)
        ]
        return {
            "turn, new thread": await best_of(turns.new_thread, repeat, rounds),
            "turn, known thread": await best_of(turns.same_thread, repeat // 4, rounds),
            "get_thread": await best_of(lambda: store.get_thread("owner", "agent", "t1"), repeat, rounds),
            "checkpoint, 1 run": await best_of(lambda: store.checkpoint(running[:1]), repeat, rounds),
            "checkpoint, 10 runs": await best_of(lambda: store.checkpoint(running), repeat // 10, rounds),
        }
    finally:
        await store.close()


async def run_log_ops(url: str, repeat: int, rounds: int) -> dict[str, float]:
    """A run's log opened, one frame written and the log ended, on Redis."""
    client = redis.Redis.from_url(url)
    run_log = RedisRunLog(client)
    count = 0

    async def run() -> None:
        nonlocal count
        count += 1
        writer = await run_log.create(f"bench{count}")
        writer.write(FRAME)
        await writer.close("finished")

    try:
        return {"run log opened and ended": await best_of(run, repeat, rounds)}
    finally:
        await run_log.aclose()
        await client.aclose()


async def flush_ops(url: str, repeat: int, rounds: int) -> dict[str, float]:
    """One run-log flush as chatgate's script and as a pipeline of one XADD per run."""
    client = redis.Redis.from_url(url)
    flush = client.register_script(_FLUSH)
    results = {}
    for runs in (1, 10):
        logs = [f"chatgate:run:bench{n}:log" for n in range(runs)]

        async def script(logs: list[str] = logs) -> object:
            return await flush(keys=logs, args=[10_000, len(logs), "replica", 3000, *[FRAME] * len(logs)])

        async def pipeline(logs: list[str] = logs) -> object:
            async with client.pipeline(transaction=False) as pipe:
                for log in logs:
                    pipe.xadd(log, {"f": FRAME}, maxlen=10_000, approximate=True)
                return await pipe.execute()

        results[f"flush, {runs} run(s): script"] = await best_of(script, repeat, rounds)
        results[f"flush, {runs} run(s): pipeline"] = await best_of(pipeline, repeat, rounds)
    await client.aclose()
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=int, default=400)
    parser.add_argument("--rounds", type=int, default=4)
    args = parser.parse_args()
    rows: dict[str, float] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for name, value in uvloop.run(store_ops(f"sqlite:///{tmp}/bench.sqlite", args.repeat, args.rounds)).items():
            rows[f"SQLite {name}"] = value
    with children_quiet(), running_postgres() as url:
        for name, value in uvloop.run(store_ops(url, args.repeat, args.rounds)).items():
            rows[f"PostgreSQL {name}"] = value
    with running_redis() as url:
        rows |= uvloop.run(run_log_ops(url, args.repeat, args.rounds))
        rows |= uvloop.run(flush_ops(url, args.repeat, args.rounds))
    width = max(map(len, rows))
    for name, value in rows.items():
        print(f"{name:<{width}}  {value:7.0f} µs CPU")


if __name__ == "__main__":
    main()

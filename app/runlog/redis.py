"""The run log of several replicas: Redis Streams, batched writes, and a producer lease.

Keys per run (prefix ``chatgate:run:{run_id}:``):

- ``log``: a Stream. Its first entry marks the start (``t=start``); then one entry per batch of frames
  (``f=<bytes>``) and of the run's journal lines (``j=<lines>``, app/threads/journal.py), written every
  ``flush_interval`` at most; the last marks the ending (``t=end``).
  Trimmed to about ``max_entries``; once the start is trimmed the run can no longer be replayed.
- ``lease``: the producing replica's id, expiring after ``lease`` seconds unless renewed. A follower
  that finds no new entry and no lease knows the producer died, and ends its stream as failed.
- ``stop``: set by ``request_stop`` on any replica; the producer polls it with each lease renewal.

A run whose lease lapsed without its turn saved is recovered from its journal (``lost_journal``,
app/threads/recovery.py). A producer that ended the log but could not save its turn yet (the store down)
keeps its lease renewed until it has (``close(hold=True)``, ``release``).

Runs this process produces are also held in a ``MemoryRunLog``, so local followers (the request that
started the run above all) read them without a round trip to Redis.

One pump task per process writes every run's new frames, and renews the leases, in one script call
(``_FLUSH``) per ``flush_interval``: one command to encode and one reply to parse however many runs are
streaming. A pipeline of one command per run cost redis-py about 40 µs of CPU a command
(docs/performance.md). A run's start and its ending are one script call each too (``_CREATE``, ``_END``),
atomic as a ``MULTI`` block is, for one command's cost.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import secrets
from collections.abc import AsyncIterator
from typing import Any

import redis.asyncio as redis

from chatgate.runlog.base import ProducerLost, ReplayUnavailable, RunEnding, RunLogLimits, RunLogUnavailable
from chatgate.runlog.memory import MemoryRunLog, MemoryRunWriter

__all__ = ["RedisRunLog"]

logger = logging.getLogger("chatgate.runlog")

_PREFIX = "chatgate:run:"

_FLUSH = """
-- KEYS: the logs of the runs with new frames, then a lease and a stop key for each run renewed now
-- ARGV: max entries, how many logs, this replica, the lease in ms, then per log its batch of frames and
-- its batch of journal lines (either may be empty)
local logs = tonumber(ARGV[2])
for i = 1, logs do
  local frames, journal = ARGV[3 + 2 * i], ARGV[4 + 2 * i]
  if frames ~= '' and journal ~= '' then
    redis.call('XADD', KEYS[i], 'MAXLEN', '~', ARGV[1], '*', 'f', frames, 'j', journal)
  elseif frames ~= '' then
    redis.call('XADD', KEYS[i], 'MAXLEN', '~', ARGV[1], '*', 'f', frames)
  else
    redis.call('XADD', KEYS[i], 'MAXLEN', '~', ARGV[1], '*', 'j', journal)
  end
end
local stops = {}
for i = logs + 1, #KEYS, 2 do
  redis.call('SET', KEYS[i], ARGV[3], 'PX', ARGV[4])
  stops[#stops + 1] = redis.call('EXISTS', KEYS[i + 1])
end
return stops
"""

_CREATE = """
-- KEYS: the log, the lease. ARGV: this replica, the lease in ms, max entries
redis.call('SET', KEYS[2], ARGV[1], 'PX', ARGV[2])
redis.call('XADD', KEYS[1], 'MAXLEN', '~', ARGV[3], '*', 't', 'start')
"""

_END = """
-- KEYS: the log, the lease, the stop key. ARGV: max entries, the log's ttl in ms, the ending, "1" to keep
-- the lease (the turn is not saved yet), then the run's last frames and journal lines not flushed yet
if ARGV[5] ~= '' then
  redis.call('XADD', KEYS[1], 'MAXLEN', '~', ARGV[1], '*', 'f', ARGV[5])
end
if ARGV[6] ~= '' then
  redis.call('XADD', KEYS[1], 'MAXLEN', '~', ARGV[1], '*', 'j', ARGV[6])
end
redis.call('XADD', KEYS[1], 'MAXLEN', '~', ARGV[1], '*', 't', 'end', 'e', ARGV[3])
redis.call('PEXPIRE', KEYS[1], ARGV[2])
if ARGV[4] == '1' then
  redis.call('DEL', KEYS[3])
else
  redis.call('DEL', KEYS[2], KEYS[3])
end
"""

_Entry = tuple[bytes, dict[bytes, bytes]]


def _entries(reply: Any) -> list[_Entry]:
    """The entries of an XREAD reply on one stream (redis-py types it as any RESP shape)."""
    if not reply:
        return []
    if isinstance(reply, dict):  # RESP3
        return list(next(iter(reply.values()))[0]) if reply else []
    return list(reply[0][1])


def _keys(run_id: str) -> tuple[str, str, str]:
    base = f"{_PREFIX}{run_id}:"
    return base + "log", base + "lease", base + "stop"


class _RedisRunWriter:
    """Writes locally at once and queues the frame for the log's next batch to Redis."""

    keeps_journal = True

    def __init__(self, local: MemoryRunWriter, log: RedisRunLog) -> None:
        self.run_id = local.run_id
        self.keys = _keys(local.run_id)
        self.batch: list[bytes] = []
        self.lines: list[bytes] = []
        self.stop = asyncio.Event()
        self._local = local
        self._log = log

    def write(self, frame: bytes) -> None:
        self._local.write(frame)
        if not (self.batch or self.lines):
            self._log.dirty.add(self)
        self.batch.append(frame)

    def journal(self, record: bytes) -> None:
        if not (self.batch or self.lines):
            self._log.dirty.add(self)
        self.lines.append(record)

    async def close(self, ending: RunEnding, *, hold: bool = False) -> None:
        await self._local.close(ending)
        await self._log.end(self, ending, hold=hold)

    async def release(self) -> None:
        await self._log.release(self)

    async def stop_requested(self) -> None:
        local = asyncio.ensure_future(self._local.stop_requested())
        remote = asyncio.ensure_future(self.stop.wait())
        try:
            await asyncio.wait({local, remote}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            local.cancel()
            remote.cancel()


class RedisRunLog:
    """Run logs shared by every replica through one Redis.

    One task per process (not per run) writes every run's pending frames in one script call each
    ``flush_interval``, and with it, each third of the lease, renews every lease and reads every stop
    flag.
    """

    def __init__(self, client: redis.Redis, limits: RunLogLimits | None = None) -> None:
        self.limits = limits or RunLogLimits()
        self.replica = f"replica-{secrets.token_hex(6)}"
        self.dirty: set[_RedisRunWriter] = set()
        self._client = client
        self._local = MemoryRunLog(self.limits)
        self._running: dict[str, _RedisRunWriter] = {}
        self._flushing = asyncio.Lock()  # an ending never overtakes its run's last batch
        self._pump_task: asyncio.Task[None] | None = None
        self._create = client.register_script(_CREATE)
        self._end = client.register_script(_END)

    async def create(self, run_id: str) -> _RedisRunWriter:
        """Open the log of a new run, leased to this replica."""
        writer = _RedisRunWriter(await self._local.create(run_id), self)
        log, lease, _ = writer.keys
        await self._create(
            keys=[log, lease], args=[self.replica, int(self.limits.lease * 1000), self.limits.max_entries]
        )
        self._running[run_id] = writer
        if self._pump_task is None or self._pump_task.done():
            self._pump_task = asyncio.create_task(self._pump(), name="runlog-pump")
        return writer

    def _take_batches(self, writers: set[_RedisRunWriter]) -> tuple[list[str], list[bytes]]:
        """The logs of ``writers`` with frames or journal lines pending, and their batches (now taken).

        Two batches per log: its frames joined, and its journal lines joined by newlines.
        """
        logs: list[str] = []
        batches: list[bytes] = []
        for writer in writers:
            if writer.batch or writer.lines:
                logs.append(writer.keys[0])
                batches += [b"".join(writer.batch), b"\n".join(writer.lines)]
                writer.batch = []
                writer.lines = []
        return logs, batches

    async def _pump(self) -> None:
        flush = self._client.register_script(_FLUSH)
        lease_ms = int(self.limits.lease * 1000)
        renew_every = self.limits.lease / 3
        loop = asyncio.get_running_loop()
        next_renewal = loop.time() + renew_every
        while self._running:
            await asyncio.sleep(self.limits.flush_interval)
            renew = loop.time() >= next_renewal
            if not (self.dirty or renew):
                continue
            running = list(self._running.values()) if renew else []
            try:
                async with self._flushing:
                    dirty, self.dirty = self.dirty, set()
                    logs, batches = self._take_batches(dirty)
                    leases = [key for writer in running for key in writer.keys[1:]]
                    if renew:
                        next_renewal = loop.time() + renew_every
                    head: list[bytes | str | int] = [self.limits.max_entries, len(logs), self.replica, lease_ms]
                    stops = await flush(keys=[*logs, *leases], args=[*head, *batches])
            except redis.RedisError as exc:
                # Followers on other replicas will see the leases lapse; local followers are unaffected.
                logger.warning("the run log could not reach Redis: %s", exc)
                continue
            for writer, stop in zip(running, stops, strict=True):
                if stop:
                    writer.stop.set()

    async def end(self, writer: _RedisRunWriter, ending: RunEnding, *, hold: bool = False) -> None:
        """Write the run's last frames and its ending, drop its lease (unless ``hold``), let its log expire."""
        if not hold:
            self._running.pop(writer.run_id, None)
        self.dirty.discard(writer)
        try:
            async with self._flushing:
                last = self._take_batches({writer})[1] or [b"", b""]
                head = [self.limits.max_entries, int(self.limits.ttl * 1000), ending, "1" if hold else "0"]
                await self._end(keys=list(writer.keys), args=[*head, *last])
        except redis.RedisError as exc:
            logger.warning("run %s: the run log's ending could not reach Redis: %s", writer.run_id, exc)

    async def release(self, writer: _RedisRunWriter) -> None:
        """Drop the lease ``end(hold=True)`` kept: the run's turn is saved."""
        if self._running.pop(writer.run_id, None) is None:
            return
        try:
            await self._client.delete(*writer.keys[1:])
        except redis.RedisError as exc:  # it lapses on its own; a recovery then finds the turn saved
            logger.warning("run %s: its lease could not be dropped: %s", writer.run_id, exc)

    async def lost_journal(self, run_id: str) -> list[bytes] | None:
        """The journal lines of a run whose lease lapsed, when its log still holds its start."""
        if self._local.local(run_id) is not None:
            return None  # this process produces it: alive
        log, lease, _ = _keys(run_id)
        try:
            if await self._client.exists(lease):
                return None
            reply: Any = await self._client.xrange(log)
            entries: list[_Entry] = list(reply or [])
        except redis.RedisError as exc:
            raise RunLogUnavailable(f"run {run_id}: {exc}") from exc
        if not entries or entries[0][1].get(b"t") != b"start":
            return None  # unknown, or its start trimmed: the journal is not whole
        return [line for _, fields in entries if b"j" in fields for line in fields[b"j"].split(b"\n")]

    def follow(self, run_id: str) -> AsyncIterator[bytes]:
        """Locally when this replica produces the run, otherwise from Redis."""
        if self._local.local(run_id) is not None:
            return self._local.follow(run_id)
        return self._follow_remote(run_id)

    async def _follow_remote(self, run_id: str) -> AsyncIterator[bytes]:
        log, lease, _ = _keys(run_id)
        block_ms = int(min(self.limits.lease, 1.0) * 1000)
        last: bytes | str = "0-0"
        started = False
        while True:
            try:
                entries = _entries(await self._client.xread({log: last}, count=256, block=block_ms))
                if not entries:
                    if await self._client.exists(lease):
                        continue
                    # The lease is gone: read once more, in case the ending was written just before.
                    entries = _entries(await self._client.xread({log: last}, count=256))
            except redis.RedisError as exc:
                raise RunLogUnavailable(f"run {run_id}: the run log cannot be reached: {exc}") from exc
            if not entries:
                if not started:
                    raise ReplayUnavailable(f"no run log for run {run_id}")
                raise ProducerLost(f"the replica producing run {run_id} stopped without ending it")
            for entry_id, fields in entries:
                last = entry_id
                kind = fields.get(b"t")
                if not started:
                    if kind != b"start":
                        raise ReplayUnavailable(f"run {run_id} is longer than the run log keeps")
                    started = True
                elif kind == b"end":
                    return
                elif b"f" in fields:
                    yield fields[b"f"]

    async def request_stop(self, run_id: str) -> bool:
        """Stop a local run at once; a remote one when its producer next renews its lease."""
        if await self._local.request_stop(run_id):
            return True
        if self._local.local(run_id) is not None:
            return False  # ended here (its lease may be held while its turn is saved): nothing to stop
        _, lease, stop = _keys(run_id)
        if not await self._client.exists(lease):
            return False
        await self._client.set(stop, b"1", px=int(self.limits.ttl * 1000))
        return True

    async def aclose(self) -> None:
        """Stop the pump and drop the local logs (the Redis pool belongs to the app)."""
        if self._pump_task is not None:
            self._pump_task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._pump_task
        await self._local.aclose()

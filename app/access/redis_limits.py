"""Per-key limits shared by every replica through Redis: one atomic Lua script per check.

``rpm`` is a sorted set of admitted request times per key (a sliding 60 s window, read on Redis's clock
so replicas with skewed clocks agree). A stream slot is a member of a sorted set scored by its expiry:
a running stream pushes its expiry forward every ``SLOT_REFRESH_SECONDS``, so the slots of a replica
that crashed expire within ``SLOT_TTL_SECONDS`` instead of blocking the key for good. A slot taken
with a run's budget step (its first model call reserved, app/usage/holds.py) goes back with the run's last
spend, in the script that settles it: its release after the response's last byte then finds it gone and
sends nothing.

When Redis does not answer, ``[server] redis_failure`` decides: ``"closed"`` refuses with 503, ``"open"``
lets the request through uncounted.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from typing import Any, Literal

import redis.asyncio as redis
from redis.exceptions import RedisError

from chatgate.access.limits import WINDOW_SECONDS, AdmissionCheck, StreamSlot, rate_limited, too_many_streams
from chatgate.errors import RequestError
from chatgate.usage import BUDGET_LUA

__all__ = ["SLOT_REFRESH_SECONDS", "SLOT_TTL_SECONDS", "RedisLimits"]

logger = logging.getLogger("chatgate.access")

SLOT_TTL_SECONDS = 120
SLOT_REFRESH_SECONDS = 40

_NOW_MS = """
local time = redis.call('TIME')
local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
"""

# KEYS[1]: admitted request times. ARGV: rpm, window ms, a unique member. Returns -1 when admitted,
# else the milliseconds until a place frees.
_ADMIT = (
    _NOW_MS
    + """
local rpm = tonumber(ARGV[1])
local window = tonumber(ARGV[2])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now - window)
local count = redis.call('ZCARD', KEYS[1])
if count >= rpm then
  local freeing = redis.call('ZRANGE', KEYS[1], count - rpm, count - rpm, 'WITHSCORES')
  return tonumber(freeing[2]) + window - now
end
redis.call('ZADD', KEYS[1], now, ARGV[3])
redis.call('PEXPIRE', KEYS[1], window)
return -1
"""
)

# KEYS[1]: open slots scored by expiry; KEYS[2..]: an admission check's (a run's budget step, BUDGET_LUA).
# ARGV: most, ttl ms, the slot's member, then the check's. Returns 1 when held, else 0; with a check, {held,
# its step's answer}. A check that refuses takes no slot; a slot that is not free takes no reservation.
_OPEN_STREAM = (
    _NOW_MS
    + BUDGET_LUA
    + """
local budget = nil
if #KEYS > 1 then
  budget = budget_step(2, 4, now)
  if budget[1] == 0 then
    return {0, budget}
  end
end
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
if redis.call('ZCARD', KEYS[1]) >= tonumber(ARGV[1]) then
  if budget == nil then
    return 0
  end
  return {0, budget}
end
redis.call('ZADD', KEYS[1], now + tonumber(ARGV[2]), ARGV[3])
redis.call('PEXPIRE', KEYS[1], tonumber(ARGV[2]))
if budget == nil then
  return 1
end
if ARGV[11] ~= '' then  -- the hold the check asks for: BUDGET_LUA's ARGV from 4, its eighth
  budget_hold(2, 4, now)
  budget[1] = 2
end
return {1, budget}
"""
)

# KEYS[1]: open slots. ARGV: ttl ms, the slot's member. Pushes a held slot's expiry forward.
_KEEP_STREAM = (
    _NOW_MS
    + """
if redis.call('ZADD', KEYS[1], 'XX', 'CH', now + tonumber(ARGV[1]), ARGV[2]) == 1 then
  redis.call('PEXPIRE', KEYS[1], tonumber(ARGV[1]))
end
return 1
"""
)

_FAILURES = (RedisError, OSError)


class _RedisSlot:
    expires = True

    def __init__(self, client: redis.Redis, key: str, member: str) -> None:
        self._client = client
        self._key = key
        self._member = member
        self._held = True

    async def keep(self) -> None:
        """Push this slot's expiry forward until cancelled (the stream's lifetime)."""
        script = self._client.register_script(_KEEP_STREAM)
        while True:
            await asyncio.sleep(SLOT_REFRESH_SECONDS)
            try:
                await script(keys=[self._key], args=[SLOT_TTL_SECONDS * 1000, self._member])
            except _FAILURES as exc:
                logger.warning("could not refresh a stream slot in Redis (%s)", type(exc).__name__)

    def released(self) -> None:
        """The slot's member was removed by another script (the run's last spend): ``release`` has nothing to do."""
        self._held = False

    async def release(self) -> None:
        if not self._held:
            return
        self._held = False
        try:
            await self._client.zrem(self._key, self._member)  # removing a removed member is harmless
        except _FAILURES as exc:
            logger.warning("could not release a stream slot in Redis (%s); it expires on its own", type(exc).__name__)


class _UncountedSlot:
    """What a stream holds when Redis is down and ``redis_failure = "open"``."""

    expires = False

    async def keep(self) -> None:
        await asyncio.get_running_loop().create_future()  # until cancelled

    async def release(self) -> None:
        return None


class RedisLimits:
    """``Limits`` in Redis, shared by every replica that uses the same Redis."""

    def __init__(self, client: redis.Redis, failure: Literal["closed", "open"]) -> None:
        self._client = client
        self._failure = failure
        self._admit = client.register_script(_ADMIT)
        self._open_stream = client.register_script(_OPEN_STREAM)

    async def admit(self, key_id: str, rpm: int) -> None:
        """See ``Limits.admit``."""
        args: list[Any] = [rpm, int(WINDOW_SECONDS * 1000), uuid.uuid4().hex]
        try:
            wait_ms = int(await self._admit(keys=[f"chatgate:rpm:{key_id}"], args=args))
        except _FAILURES as exc:
            self._unavailable(exc)
            return
        if wait_ms >= 0:
            raise rate_limited(key_id, rpm, wait_ms / 1000)

    async def open_stream(self, key_id: str, most: int, check: AdmissionCheck | None = None) -> StreamSlot:
        """See ``Limits.open_stream``; a check in Redis runs in the same script (one round trip)."""
        call = check.admission_call() if check is not None else None
        if check is not None and call is None:
            await check.precheck()
        keys, args = call or ((), ())
        key, member = f"chatgate:streams:{key_id}", uuid.uuid4().hex
        try:
            answer = await self._open_stream(keys=[key, *keys], args=[most, SLOT_TTL_SECONDS * 1000, member, *args])
        except _FAILURES as exc:
            if check is not None and call is not None:
                check.precheck_failed(exc)
            self._unavailable(exc)
            return _UncountedSlot()
        held = int(answer[0] if call is not None else answer)
        if check is not None and call is not None:
            check.precheck_read(answer[1])  # its refusal took no slot
        elif check is not None and not held:
            check.abandoned()
        if not held:
            raise too_many_streams(key_id, most)
        slot = _RedisSlot(self._client, key, member)
        if check is not None and call is not None:
            check.release_with_spend(key, member, slot.released)
        return slot

    def _unavailable(self, exc: BaseException) -> None:
        logger.warning("Redis did not answer a limit check (%s); redis_failure = %s", type(exc).__name__, self._failure)
        if self._failure == "closed":
            raise RequestError(
                503,
                "limits_unavailable",
                "the shared rate-limit store is not answering; try again shortly",
                headers={"Retry-After": "5"},
            )

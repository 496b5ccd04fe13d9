"""A run's trip to the spend counters: settle what it spent and its reservation (hold), then perhaps hold anew.

A hold is what one model call reserves against every budget that applies before it is made: its estimate
is added to the counters at once (so the counters always read spend plus the holds in flight) and taken
out again when the call's real usage is added. Each scope keeps its holds in a sorted set scored by when
they lapse (``[budgets] hold_seconds``), so the holds of a process that crashed are taken out by the next
trip of any run on that scope. The set lives as long as the month's counters (never shorter: a set gone
with holds in it would leave them in the counters for good). A hold's member says what it holds:
``id|tokens|micro_usd|day``.

``BUDGET_LUA`` is the step in Redis: Lua functions the spend script (counters.py) and the access layer's
admission script (app/access/redis_limits.py, with the stream slot) both call, so a reservation is taken
in the same round trip as the slot. ``MemoryCounters`` does the same in process memory.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from chatgate.config import window_end, window_id

__all__ = ["BUDGET_LUA", "HELD", "REACHED", "WITHIN", "BudgetStep", "Windows", "hold_member", "unheld"]

REACHED, WITHIN, HELD = 0, 1, 2
"""A step's outcome: a limit is reached (nothing held); every limit has room (no hold asked, or none taken); held."""


@dataclass(frozen=True, slots=True)
class Windows:
    """The day and month a run counts in (its admission's), and when their counters expire (Unix seconds)."""

    day: str
    month: str
    day_expires: int
    month_expires: int

    @classmethod
    def of(cls, at: datetime) -> Windows:
        """The windows ``at`` falls in; each counter expires a day after its window ends."""
        day_end, month_end = window_end("day", at) + timedelta(days=1), window_end("month", at) + timedelta(days=1)
        return cls(window_id("day", at), window_id("month", at), int(day_end.timestamp()), int(month_end.timestamp()))


@dataclass(frozen=True, slots=True)
class BudgetStep:
    """One trip for a run: add ``tokens`` and ``micro_usd`` spent, settle the hold ``settle``, then take ``hold``.

    ``limits`` are, per scope, its ceilings in whole units (tokens a day, micro-dollars a day, micro-dollars
    a month; -1 where it sets none). ``windows`` are those counted: the run's admission's.
    """

    scopes: tuple[str, ...]
    limits: tuple[tuple[int, int, int], ...]
    windows: Windows
    settle: str = ""
    tokens: int = 0
    micro_usd: int = 0
    hold: str = ""
    hold_ms: int = 0


def hold_member(hold_id: str, tokens: int, micro_usd: int, day: str) -> str:
    """The member of a hold of ``tokens`` and ``micro_usd`` taken in ``day`` (``2026-11-25``)."""
    return f"{hold_id}|{tokens}|{micro_usd}|{day}"


def unheld(member: str) -> tuple[int, int, str]:
    """What a hold's member holds: tokens, micro-dollars, and its day (``2026-11-25``)."""
    _, tokens, micro_usd, day = member.rsplit("|", 3)
    return int(tokens), int(micro_usd), day


BUDGET_LUA = """
local function budget_unhold(k, member, day, month)
  local tokens, micro, held = string.match(member, '|(%d+)|(%d+)|([^|]+)$')
  if held == day then
    redis.call('DECRBY', KEYS[k], tokens)
    redis.call('DECRBY', KEYS[k + 1], micro)
  end
  if string.sub(held, 1, 7) == month then
    redis.call('DECRBY', KEYS[k + 2], tokens)
    redis.call('DECRBY', KEYS[k + 3], micro)
  end
end

local function budget_add(k, A, tokens, micro)
  if tokens == '0' and micro == '0' then
    return
  end
  redis.call('INCRBY', KEYS[k], tokens)
  redis.call('INCRBY', KEYS[k + 1], micro)
  redis.call('INCRBY', KEYS[k + 2], tokens)
  redis.call('INCRBY', KEYS[k + 3], micro)
  redis.call('EXPIREAT', KEYS[k], ARGV[A + 2])
  redis.call('EXPIREAT', KEYS[k + 1], ARGV[A + 2])
  redis.call('EXPIREAT', KEYS[k + 2], ARGV[A + 3])
  redis.call('EXPIREAT', KEYS[k + 3], ARGV[A + 3])
end

local function budget_step(B, A, now)
  local day, month, settled = ARGV[A], ARGV[A + 1], ARGV[A + 4]
  local within = 1
  local values = {}
  for k = B, #KEYS, 5 do
    if settled ~= '' and redis.call('ZREM', KEYS[k + 4], settled) == 1 then
      budget_unhold(k, settled, day, month)
    end
    budget_add(k, A, ARGV[A + 5], ARGV[A + 6])
    local lapsed = redis.call('ZRANGEBYSCORE', KEYS[k + 4], '-inf', now)
    for _, member in ipairs(lapsed) do
      budget_unhold(k, member, day, month)
    end
    if #lapsed > 0 then
      redis.call('ZREMRANGEBYSCORE', KEYS[k + 4], '-inf', now)
    end
    local read = {}
    for i = 1, 4 do
      read[i] = redis.call('GET', KEYS[k + i - 1])
    end
    local limits = A + 9 + (k - B) / 5 * 3
    local used = {read[1], read[2], read[4]}
    for i = 1, 3 do
      local limit = tonumber(ARGV[limits + i - 1])
      if limit >= 0 and tonumber(used[i] or '0') >= limit then
        within = 0
      end
    end
    for i = 1, 4 do
      values[#values + 1] = read[i]
    end
  end
  return {within, values}
end

local function budget_hold(B, A, now)
  local member = ARGV[A + 7]
  local tokens, micro = string.match(member, '|(%d+)|(%d+)|[^|]+$')
  local ms = tonumber(ARGV[A + 8])
  for k = B, #KEYS, 5 do
    budget_add(k, A, tokens, micro)
    redis.call('ZADD', KEYS[k + 4], now + ms, member)
    redis.call('EXPIREAT', KEYS[k + 4], ARGV[A + 3])
  end
end
"""
"""The step's Lua functions; a script defines ``now`` (ms, Redis's clock) and calls them.

KEYS from ``B``: per scope its day's tokens and micro-dollars, its month's, its holds (``BudgetStep``'s
keys, counters.py). ARGV from ``A``: day, month, the day's and the month's counter expiries, the hold to
settle ('' none), the tokens and micro-dollars spent, the hold to take ('' none), its milliseconds, then
per scope its three limits. ``budget_step`` returns ``{outcome, the counters' values}`` (``REACHED`` or
``WITHIN``); a script calls ``budget_hold`` after it when a hold is asked for and the outcome is ``WITHIN``.
"""

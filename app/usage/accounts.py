"""The one place that records what runs consume and answers "may this caller spend more?".

``UsageAccounts`` belongs to the app (``app.state.usage``): its ledger, its spend counters, its prices.
``RunAccount`` is one run's: the runner asks ``check()`` before each model call, tells ``add()`` each
call's usage, and ``close()`` before the run's last event (the spend counted; the ledger row then
written in the background). A run that ends otherwise (failure, hang-up) is closed by ``finish()``.
With budgets and stream slots both in Redis, the script that counts the run's last spend also gives
back its stream slot (``release_with_spend``): one round trip where there were two.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Coroutine, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import redis.asyncio as redis
from redis.exceptions import RedisError

from chatgate.caller import Caller
from chatgate.config import Budget, Window, window_end
from chatgate.errors import RequestError, StoreUnavailable
from chatgate.events import Usage
from chatgate.store import Engine
from chatgate.telemetry import Metrics
from chatgate.usage.counters import MemoryCounters, RedisCounters, Spend, SpendCounters
from chatgate.usage.ledger import MemoryLedger, SqlUsageLedger, UsageLedger, UsageRecord
from chatgate.usage.pricing import Pricing
from chatgate.usage.tokens import RunUsage

__all__ = ["BudgetExceeded", "BudgetScope", "PersonBudget", "RunAccount", "UsageAccounts", "person_of"]


def person_of(caller: Caller) -> str | None:
    """The person a run is counted for: a signed-in person (``iss#user``), or the user a trusted key named."""
    return caller.person or caller.user


logger = logging.getLogger("chatgate.usage")

PersonBudget = Callable[[Caller], Budget | None]
"""The per-person budget of a caller (``[auth.jwt.budget]`` for a signed-in person), or None."""

_MICRO = 1_000_000
_RECORD_ATTEMPTS = 30
"""Tries to write a run's ledger row through a store outage, a second apart."""
# Background ledger writes (and closes of runs that ended without one), kept referenced until done.
_writing: set[asyncio.Task[Any]] = set()


class BudgetExceeded(RequestError):
    """429 ``budget_exceeded``: a budget's window is spent; ``Retry-After`` is the window's end."""

    def __init__(self, message: str, retry_after: int) -> None:
        super().__init__(429, "budget_exceeded", message, headers={"Retry-After": str(retry_after)})


@dataclass(frozen=True, slots=True)
class BudgetScope:
    """One budget that applies to a run: its counter scope (``key:ID``...), what to call it, its limits."""

    scope: str
    label: str
    budget: Budget


class UsageAccounts:
    """The app's usage ledger, spend counters and prices (one per process)."""

    def __init__(
        self,
        ledger: UsageLedger,
        counters: SpendCounters,
        pricing: Pricing,
        metrics: Metrics | None = None,
        *,
        fail_open: bool = False,
        person_budget: PersonBudget | None = None,
    ) -> None:
        self.ledger = ledger
        self.counters = counters
        self.pricing = pricing
        self.metrics = metrics
        self.fail_open = fail_open
        self.person_budget = person_budget

    @classmethod
    def open(
        cls,
        store_engine: Engine | None,
        redis_client: redis.Redis | None,
        pricing: Pricing,
        metrics: Metrics | None,
        *,
        fail_open: bool = False,
        person_budget: PersonBudget | None = None,
    ) -> UsageAccounts:
        """The ledger in the store (else memory), the counters in Redis (else this process)."""
        ledger: UsageLedger = SqlUsageLedger(store_engine) if store_engine is not None else MemoryLedger()
        counters: SpendCounters = RedisCounters(redis_client) if redis_client is not None else MemoryCounters()
        return cls(ledger, counters, pricing, metrics, fail_open=fail_open, person_budget=person_budget)

    def budgets(
        self, caller: Caller, agent: str, key_budget: Budget | None, agent_budget: Budget | None
    ) -> tuple[BudgetScope, ...]:
        """The budgets a run of ``caller`` on ``agent`` counts against: its key's, its person's, the agent's."""
        scopes = []
        if key_budget is not None and caller.key_id is not None:
            scopes.append(BudgetScope(f"key:{caller.key_id}", f"key {caller.key_id!r}", key_budget))
        who = person_of(caller)
        person = self.person_budget(caller) if self.person_budget is not None and who else None
        if person is not None:
            scopes.append(BudgetScope(f"person:{caller.owner}", f"person {who!r}", person))
        if agent_budget is not None:
            scopes.append(BudgetScope(f"agent:{agent}", f"agent {agent!r}", agent_budget))
        return tuple(scopes)

    async def check(self, scopes: Sequence[BudgetScope]) -> None:
        """Raise ``BudgetExceeded`` naming the first spent budget; a counter outage per ``redis_failure``."""
        if not scopes:
            return
        now = datetime.now(UTC)
        try:
            spent = await self.counters.spent([s.scope for s in scopes], now)
        except RedisError as exc:
            self.unavailable(exc)
            return
        self.judge(scopes, spent, now)

    def unavailable(self, error: Exception) -> None:
        """The counters did not answer a check: 503 ``budgets_unavailable``, or (``redis_failure = "open"``) go on."""
        if self.fail_open:
            logger.warning("budgets not checked, Redis is unavailable: %s", error)
            return
        message = "budgets cannot be checked right now; retry later"
        raise RequestError(503, "budgets_unavailable", message, headers={"Retry-After": "5"}) from error

    @staticmethod
    def judge(scopes: Sequence[BudgetScope], spent: dict[tuple[str, Window], Spend], now: datetime) -> None:
        """Raise ``BudgetExceeded`` naming the first of ``scopes`` whose ``spent`` reached a limit."""
        for scope in scopes:
            for limit in scope.budget.limits:
                used = spent[(scope.scope, limit.window)]
                amount = used.tokens if limit.measure == "tokens" else used.micro_usd / _MICRO
                if amount >= limit.amount:
                    end = window_end(limit.window, now)
                    raise BudgetExceeded(
                        f"the {scope.label} budget of {limit.describe()} is spent;"
                        f" it renews at {end.strftime('%Y-%m-%dT%H:%M:%SZ')}",
                        max(1, int((end - now).total_seconds()) + 1),
                    )


class RunAccount:
    """One run's usage and its budgets."""

    def __init__(
        self,
        accounts: UsageAccounts,
        caller: Caller,
        *,
        agent: str,
        model: str,
        provider_kind: str | None,
        thread_id: str | None,
        run_id: str,
        budgets: tuple[BudgetScope, ...] = (),
    ) -> None:
        self._accounts = accounts
        self._caller = caller
        self._agent = agent
        self._model = model
        self._kind = provider_kind
        self._thread_id = thread_id
        self._run_id = run_id
        self._budgets = budgets
        self.usage = RunUsage()
        self._cost: float | None = None
        self._pending = RunUsage()  # calls not yet added to the spend counters
        self._checked = False  # the request was checked before its stream: the first call needs no check
        self._closed = False
        self._admitted_at = datetime.now(UTC)  # the windows ``admission_keys`` names
        self._slot: _SlotRelease | None = None  # the stream slot the last spend gives back

    async def precheck(self) -> None:
        """The check before the response starts (a refusal is then a plain 429)."""
        await self._accounts.check(self._budgets)
        self._checked = True

    def admission_keys(self) -> list[str] | None:
        """The Redis counters of this run's budgets, for the access layer to read as it admits the stream.

        None without budgets or without Redis: ``precheck`` then runs on its own (app/access/limits.py,
        ``AdmissionCheck``).
        """
        counters = self._accounts.counters
        if not self._budgets or not isinstance(counters, RedisCounters):
            return None
        self._admitted_at = datetime.now(UTC)
        return counters.keys([s.scope for s in self._budgets], self._admitted_at)

    def precheck_read(self, values: Sequence[bytes | str | None]) -> None:
        """``precheck`` on the counters' ``values``, read with the stream's slot."""
        spent = RedisCounters.spend_of([s.scope for s in self._budgets], values)
        self._accounts.judge(self._budgets, spent, self._admitted_at)
        self._checked = True

    def precheck_failed(self, error: Exception) -> None:
        """Redis did not answer that read: as ``precheck`` does when it cannot read the counters."""
        self._accounts.unavailable(error)
        self._checked = True

    def release_with_spend(self, slots_key: str, member: str, released: Callable[[], None]) -> None:
        """The run's stream slot (``member`` of ``slots_key``) goes back with the spend ``close()`` counts.

        Only a close that writes spend removes it (then calls ``released``); otherwise the access layer
        releases the slot after the response's last byte, as it does for every slot.
        """
        self._slot = _SlotRelease(slots_key, member, released)

    async def check(self) -> None:
        """Before a model call: the spend so far counted, then every budget checked."""
        await self._count()
        if self._checked:
            self._checked = False
            return
        await self._accounts.check(self._budgets)

    def add(self, usage: Usage | None) -> None:
        """One model call ended, with the usage its provider reported (None: none)."""
        self.usage.add(usage)
        self._pending.add(usage)

    @property
    def cost_usd(self) -> float | None:
        """What the run's calls cost so far (None: none priced)."""
        return self._cost

    async def _count(self, *, last: bool = False) -> None:
        pending, self._pending = self._pending, RunUsage()
        if not pending.calls:
            return
        cost = self._accounts.pricing.cost(self._model, self._kind, pending)
        if cost is not None:
            self._cost = (self._cost or 0.0) + cost
            if self._accounts.metrics is not None:
                self._accounts.metrics.cost.labels(self._agent).inc(cost)
        if not self._budgets or not pending.reported:
            return
        micro_usd = round((cost or 0.0) * _MICRO)
        scopes, counters, now = [s.scope for s in self._budgets], self._accounts.counters, datetime.now(UTC)
        slot = self._slot if last else None
        try:
            if slot is not None and isinstance(counters, RedisCounters):
                await counters.add_and_release(scopes, pending.total_tokens, micro_usd, now, slot.key, slot.member)
                slot.released()
            else:
                await counters.add(scopes, pending.total_tokens, micro_usd, now)
        except RedisError as exc:
            logger.warning("run %r: spend not counted against budgets, Redis is unavailable: %s", self._run_id, exc)

    async def close(self) -> float | None:
        """The run is ending: count its spend (awaited: the next call anywhere sees it); its cost.

        The ledger row is written in the background: a store outage never holds up or fails the run.
        """
        if self._closed:
            return self._cost
        self._closed = True
        await self._count(last=True)
        if self.usage.calls and not self._accounts.ledger.keep(self._usage_record()):
            _in_background(self._record())
        return self._cost

    def finish(self) -> None:
        """The run is over: if ``close()`` did not run, do its work in the background."""
        if not self._closed:
            _in_background(self.close())

    def _usage_record(self) -> UsageRecord:
        usage = self.usage
        return UsageRecord(
            at=time.time(),
            key_id=self._caller.key_id,
            person=person_of(self._caller),
            agent=self._agent,
            thread_id=self._thread_id,
            run_id=self._run_id,
            model=self._model,
            calls=usage.calls,
            unreported_calls=usage.unreported_calls,
            input_tokens=usage.input_tokens if usage.reported else None,
            output_tokens=usage.output_tokens if usage.reported else None,
            reasoning_tokens=usage.reasoning_tokens,
            cached_input_tokens=usage.cached_input_tokens,
            cost_usd=self._cost,
        )

    async def _record(self) -> None:
        record = self._usage_record()
        for attempt in range(1, _RECORD_ATTEMPTS + 1):
            try:
                await self._accounts.ledger.record(record)
                return
            except StoreUnavailable as exc:  # an outage: retried, as a finished turn is
                if attempt == _RECORD_ATTEMPTS:
                    logger.warning("run %r: usage not recorded, the store stayed unavailable: %s", self._run_id, exc)
                elif attempt == 1:
                    logger.warning("run %r: usage not recorded yet, retrying: %s", self._run_id, exc)
                await asyncio.sleep(1.0)
            except Exception:  # any other database error: the run's usage is lost, nothing else
                logger.exception("run %r: usage not recorded", self._run_id)
                return


@dataclass(frozen=True, slots=True)
class _SlotRelease:
    """A run's stream slot in Redis, to give back with its last spend, and whom to tell it went back."""

    key: str
    member: str
    released: Callable[[], None]


def _in_background(work: Coroutine[Any, Any, Any]) -> None:
    task = asyncio.get_running_loop().create_task(work)
    _writing.add(task)
    task.add_done_callback(_writing.discard)

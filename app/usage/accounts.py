"""The one place that records what runs consume and answers "may this caller spend more?".

``UsageAccounts`` belongs to the app (``Running.usage``): its ledger, its spend counters, its prices.
``RunAccount`` is one run's: admission reserves its first model call (``precheck``, or the access
layer's slot script with ``admission_call``), the runner asks ``check()`` before each later call (the
spend so far settled and that call reserved), tells ``add()`` each call's usage, and ``close()`` before
the run's last event (the spend counted and the reservation settled; the ledger row then written in the
background). A run that ends otherwise (failure, hang-up) is closed by ``finish()``, and a request that
never ran by ``abandoned()``: a reservation is never left behind (and would lapse, holds.py). With budgets
and stream slots both in Redis, the script that settles the run's last spend also gives back its stream
slot (``release_with_spend``): one round trip where there were two.
"""

from __future__ import annotations

import asyncio
import logging
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import redis.asyncio as redis
from redis.exceptions import RedisError

from chatgate.background import in_background
from chatgate.caller import Caller
from chatgate.config import MICRO_USD, Budget, Window, window_end
from chatgate.errors import RequestError, StoreUnavailable
from chatgate.events import Usage
from chatgate.store import Engine
from chatgate.telemetry import Metrics
from chatgate.usage.counters import MemoryCounters, RedisCounters, Spend, SpendCounters, StepAnswer
from chatgate.usage.feedback import FeedbackBook, MemoryFeedback, SqlFeedback
from chatgate.usage.holds import HELD, REACHED, BudgetStep, Windows, hold_member
from chatgate.usage.ledger import MemoryLedger, SqlUsageLedger, UsageLedger, UsageRecord
from chatgate.usage.pricing import Pricing
from chatgate.usage.tokens import RunUsage

__all__ = ["BudgetExceeded", "BudgetScope", "PersonBudget", "RunAccount", "UsageAccounts", "person_of"]


def person_of(caller: Caller) -> str | None:
    """The person a run is counted for: a signed-in person (``iss#user``), or the user a trusted key named.

    The ledger keeps the key beside it (none for a signed-in person), and ``/usage`` groups people by both:
    a key naming ``iss#user`` in ``x-chatgate-user`` is never the signed-in person of that name.
    """
    return caller.person or caller.user


logger = logging.getLogger("chatgate.usage")

PersonBudget = Callable[[Caller], Budget | None]
"""The per-person budget of a caller (``[auth.jwt.budget]`` for a signed-in person), or None."""

_RECORD_ATTEMPTS = 30
"""Tries to write a run's ledger row through a store outage, a second apart."""


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

    @property
    def limits(self) -> tuple[int, int, int]:
        """Its ceilings in the counters' units: tokens a day, micro-dollars a day and a month (-1: none)."""
        units = {(limit.window, limit.measure): limit.units for limit in self.budget.limits}
        return units.get(("day", "tokens"), -1), units.get(("day", "usd"), -1), units.get(("month", "usd"), -1)


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
        feedback: FeedbackBook | None = None,
    ) -> None:
        self.ledger = ledger
        self.feedback: FeedbackBook = feedback if feedback is not None else MemoryFeedback()
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
        """The ledger and feedback in the store (else memory), the counters in Redis (else this process)."""
        ledger: UsageLedger
        feedback: FeedbackBook
        if store_engine is not None:
            ledger, feedback = SqlUsageLedger(store_engine), SqlFeedback(store_engine)
        else:
            feedback = MemoryFeedback()
            ledger = MemoryLedger(feedback=feedback)
        counters: SpendCounters = RedisCounters(redis_client) if redis_client is not None else MemoryCounters()
        return cls(
            ledger, counters, pricing, metrics, fail_open=fail_open, person_budget=person_budget, feedback=feedback
        )

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

    def unavailable(self, error: Exception) -> None:
        """The counters did not answer a check: 503 ``budgets_unavailable``, or (``redis_failure = "open"``) go on."""
        if self.fail_open:
            logger.warning("budgets not checked, Redis is unavailable: %s", error)
            return
        logger.warning("budgets not checked, Redis is unavailable: %r; the request is refused (503)", error)
        message = "budgets cannot be checked right now; retry later"
        raise RequestError(503, "budgets_unavailable", message, headers={"Retry-After": "5"}) from error

    @staticmethod
    def refusal(scopes: Sequence[BudgetScope], spent: dict[tuple[str, Window], Spend], now: datetime) -> BudgetExceeded:
        """The ``BudgetExceeded`` naming the first of ``scopes`` whose window in ``spent`` reached a limit."""
        for scope in scopes:
            for limit in scope.budget.limits:
                used = spent[(scope.scope, limit.window)]
                if (used.tokens if limit.measure == "tokens" else used.micro_usd) >= limit.units:
                    return _exceeded(scope, limit.describe(), limit.window, now)
        first = scopes[0]  # unreached while the script and this judge alike; never a call let through
        return _exceeded(first, first.budget.limits[0].describe(), first.budget.limits[0].window, now)


def _exceeded(scope: BudgetScope, limit: str, window: Window, now: datetime) -> BudgetExceeded:
    end = window_end(window, now)
    return BudgetExceeded(
        f"the {scope.label} budget of {limit} is spent; it renews at {end.strftime('%Y-%m-%dT%H:%M:%SZ')}",
        max(1, int((end - now).total_seconds()) + 1),
    )


class RunAccount:
    """One run's usage, and its reservations against its budgets."""

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
        reserve: Spend | None = None,
        hold_seconds: int = 600,
    ) -> None:
        self._accounts = accounts
        self._caller = caller
        self._agent = agent
        self._model = model
        self._kind = provider_kind
        self._thread_id = thread_id
        self._run_id = run_id
        self._budgets = budgets
        self._scopes = tuple(s.scope for s in budgets)
        self._limits = tuple(s.limits for s in budgets) if budgets else ()
        self._hold_id = uuid.uuid4().hex if budgets else ""
        self._holds = 0  # holds taken: each has its own member
        self._reserve = reserve or Spend()  # what each model call holds until its usage is known
        self._hold_ms = hold_seconds * 1000
        self.usage = RunUsage()
        self.prompt_version: str | None = None  # set by the runner: the prompt the run answered under
        self.variant: str | None = None
        self.trace_ids: tuple[str, str] | None = None  # set by the runner: the run's span, when traced
        self._cost: float | None = None
        self._pending = RunUsage()  # calls not yet added to the spend counters
        self._hold = ""  # the reservation in flight (holds.py), settled by the next step
        self._asked = ""  # the hold the access layer's script was asked to take
        self._checked = False  # admission reserved the first call: its check has nothing to do
        self._closed = False
        self._windows: Windows | None = None  # the windows the run counts in: its admission's
        self._slot: _SlotRelease | None = None  # the stream slot the last spend gives back

    async def precheck(self) -> None:
        """Admission on its own: the first call reserved, or the refusal (a plain 429 before the stream)."""
        self._checked = True
        await self._step(hold=True)

    def admission_call(self) -> tuple[list[str], list[str | int]] | None:
        """The Redis keys and arguments of this run's admission step, for the script that takes its stream slot.

        None without budgets or without Redis: ``precheck`` then runs on its own (app/access/limits.py,
        ``AdmissionCheck``).
        """
        if not self._budgets or not isinstance(self._accounts.counters, RedisCounters):
            return None
        step = self._next_step(hold=True)
        self._asked = step.hold
        return RedisCounters.call(step)

    def precheck_read(self, answer: Sequence[Any]) -> None:
        """``precheck`` from the admission step's answer, taken by the slot's script: held, or the refusal."""
        self._checked = True
        self._judged(RedisCounters.answer(self._scopes, answer), self._asked)

    def precheck_failed(self, error: Exception) -> None:
        """Redis did not answer that script: as ``precheck`` does when it cannot reach the counters."""
        self._checked = True
        self._accounts.unavailable(error)

    def abandoned(self) -> None:
        """Nothing runs for the request after all (its start was refused): its reservation goes back."""
        self.finish()

    def release_with_spend(self, slots_key: str, member: str, released: Callable[[], None]) -> None:
        """The run's stream slot (``member`` of ``slots_key``) goes back with the step ``close()`` takes.

        Only a close that goes to Redis removes it (then calls ``released``); otherwise the access layer
        releases the slot after the response's last byte, as it does for every slot.
        """
        self._slot = _SlotRelease(slots_key, member, released)

    async def check(self) -> None:
        """Before a model call: the spend so far settled and this call reserved, or ``BudgetExceeded``."""
        if self._checked:
            self._checked = False
            return
        await self._step(hold=True)

    def add(self, usage: Usage | None) -> None:
        """One model call ended, with the usage its provider reported (None: none)."""
        self.usage.add(usage)
        self._pending.add(usage)

    @property
    def cost_usd(self) -> float | None:
        """What the run's calls cost so far (None: none priced)."""
        return self._cost

    def _spent(self) -> tuple[RunUsage, float | None]:
        """The calls not yet counted and their cost, priced here (once): the run's cost and the cost metric."""
        pending, self._pending = self._pending, RunUsage()
        cost = self._accounts.pricing.cost(self._model, self._kind, pending) if pending.calls else None
        if cost is not None:
            self._cost = (self._cost or 0.0) + cost
            if self._accounts.metrics is not None:
                self._accounts.metrics.cost.labels(self._agent).inc(cost)
        return pending, cost

    def _next_step(self, *, hold: bool) -> BudgetStep:
        """The step that counts the calls not yet counted, settles the hold in flight and perhaps holds anew."""
        (pending, cost), reserve = self._spent(), self._reserve
        if self._windows is None:  # the first step: the run's admission
            self._windows = Windows.of(datetime.now(UTC))
        new = ""
        if hold:
            self._holds += 1
            new = hold_member(f"{self._hold_id}.{self._holds}", reserve.tokens, reserve.micro_usd, self._windows.day)
        return BudgetStep(
            scopes=self._scopes,
            limits=self._limits,
            windows=self._windows,
            settle=self._hold,
            tokens=pending.total_tokens if pending.reported else 0,
            micro_usd=round((cost or 0.0) * MICRO_USD),
            hold=new,
            hold_ms=self._hold_ms,
        )

    async def _step(self, *, hold: bool) -> None:
        """Settle what was spent and held; with ``hold``, reserve the next call (refused: ``BudgetExceeded``)."""
        if not self._budgets:
            self._spent()
            return
        step = self._next_step(hold=hold)
        if not (step.hold or step.settle or step.tokens or step.micro_usd):
            return
        self._hold = ""
        counters, slot = self._accounts.counters, None if hold else self._slot
        try:
            if slot is not None and isinstance(counters, RedisCounters):
                answer = await counters.step_and_release(step, slot.key, slot.member)
                slot.released()
            else:
                answer = await counters.step(step)
        except RedisError as exc:
            if hold:
                self._accounts.unavailable(exc)
            else:
                logger.warning("run %r: spend not counted against budgets, Redis is unavailable: %s", self._run_id, exc)
            return
        self._judged(answer, step.hold)

    def _judged(self, answer: StepAnswer, hold: str) -> None:
        """Keep the hold the step took; refuse if it asked for one and a limit is reached (a close asks none)."""
        if answer.outcome == HELD:
            self._hold = hold
        elif answer.outcome == REACHED and hold:
            raise self._accounts.refusal(self._budgets, answer.spent, datetime.now(UTC))

    async def close(self) -> float | None:
        """The run is ending: settle its spend and reservation (awaited: the next call anywhere sees it); its cost.

        The ledger row is written in the background: a store outage never holds up or fails the run.
        """
        if self._closed:
            return self._cost
        self._closed = True
        await self._step(hold=False)
        if self.usage.calls and not self._accounts.ledger.keep(self._usage_record()):
            in_background(self._record())
        return self._cost

    def finish(self) -> None:
        """The run is over: if ``close()`` did not run, do its work in the background."""
        if not self._closed:
            in_background(self.close())

    def noted(self, prompt_version: str | None, variant: str | None, trace_ids: tuple[str, str] | None) -> None:
        """What the run's row names besides its usage: its prompt version and variant, its span (if traced)."""
        self.prompt_version, self.variant, self.trace_ids = prompt_version, variant, trace_ids

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
            prompt_version=self.prompt_version,
            variant=self.variant,
            trace_id=self.trace_ids[0] if self.trace_ids else None,
            span_id=self.trace_ids[1] if self.trace_ids else None,
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

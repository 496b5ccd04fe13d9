"""Budgets: how much a key, a person or an agent may spend in a calendar day or month (UTC).

A budget is a ceiling on spend recorded plus spend reserved: a model call is admitted while a window's
spend and the reservations of the calls in flight are below a limit, and then reserves its own estimate
(``[budgets]``, ``BudgetSettings``) until its usage is known (docs/usage.md, "Reservations").
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Literal, TypeAlias

from pydantic import BaseModel, ConfigDict, Field, model_validator

__all__ = ["Budget", "BudgetSettings", "Limit", "PriceConfig", "Window", "window_end", "window_id"]

MICRO_USD = 1_000_000
"""Micro-dollars in a dollar: spend in US dollars is counted in whole micro-dollars."""

Window: TypeAlias = Literal["day", "month"]


@dataclass(frozen=True, slots=True)
class Limit:
    """One ceiling of a budget: ``amount`` tokens or US dollars per ``window``."""

    window: Window
    measure: Literal["tokens", "usd"]
    amount: float

    @property
    def units(self) -> int:
        """The ceiling in the counters' whole units: tokens, or micro-dollars."""
        return int(self.amount) if self.measure == "tokens" else round(self.amount * MICRO_USD)

    def describe(self) -> str:
        """E.g. ``$20.00 per day`` or ``200000 tokens per day``."""
        if self.measure == "tokens":
            spend = f"{int(self.amount)} tokens"
        else:  # cents when the amount has them, every digit of a smaller one
            spend = f"${self.amount:.2f}" if self.amount >= 0.01 else f"${self.amount:g}"
        return f"{spend} per {self.window}"


class Budget(BaseModel):
    """``budget = { ... }`` of a key, an agent, or (``[auth.jwt.budget]``) each signed-in person."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    tokens_per_day: int | None = Field(default=None, gt=0)
    usd_per_day: float | None = Field(default=None, gt=0)
    usd_per_month: float | None = Field(default=None, gt=0)

    @model_validator(mode="after")
    def _some_limit(self) -> Budget:
        if not self.limits:
            raise ValueError("give at least one of tokens_per_day, usd_per_day or usd_per_month")
        return self

    @property
    def limits(self) -> tuple[Limit, ...]:
        """The ceilings this budget sets."""
        limits = []
        if self.tokens_per_day is not None:
            limits.append(Limit("day", "tokens", self.tokens_per_day))
        if self.usd_per_day is not None:
            limits.append(Limit("day", "usd", self.usd_per_day))
        if self.usd_per_month is not None:
            limits.append(Limit("month", "usd", self.usd_per_month))
        return tuple(limits)


class BudgetSettings(BaseModel):
    """``[budgets]``: what a model call reserves against the budgets that apply, and for how long."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    reserve_output_tokens: int = Field(default=4096, gt=0)
    """Output tokens a call reserves when its agent's ``model_settings`` set no answer limit (``max_tokens``)."""
    hold_seconds: int = Field(default=600, ge=30)
    """How long a reservation lives unless settled: a crashed process's reservations lapse after this."""


def window_id(window: Window, now: datetime) -> str:
    """The calendar window (UTC) ``now`` falls in: ``2026-11-25`` or ``2026-11``."""
    now = now.astimezone(UTC)
    return now.strftime("%Y-%m-%d") if window == "day" else now.strftime("%Y-%m")


def window_end(window: Window, now: datetime) -> datetime:
    """When the window ``now`` falls in ends: the next UTC midnight, or the first of the next month."""
    now = now.astimezone(UTC)
    if window == "day":
        return datetime(now.year, now.month, now.day, tzinfo=UTC) + timedelta(days=1)
    if now.month == 12:
        return datetime(now.year + 1, 1, 1, tzinfo=UTC)
    return datetime(now.year, now.month + 1, 1, tzinfo=UTC)


class PriceConfig(BaseModel):
    """``[pricing."model-name"]``: US dollars per million tokens, for a model the table does not know."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    input_usd_per_mtok: float = Field(ge=0)
    output_usd_per_mtok: float = Field(ge=0)
    cached_input_usd_per_mtok: float | None = Field(default=None, ge=0)

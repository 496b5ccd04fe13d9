"""Usage, cost and budgets: what each run consumed, what it cost, and who may spend more.

- ``accounts``: ``UsageAccounts`` (the app's) and ``RunAccount`` (one run's), the one place that
  records usage and checks budgets before a model call;
- ``ledger``: one row per run, in the store or in memory; ``counters``: spend per budget window, in
  Redis or in memory; ``pricing``: genai-prices and ``[pricing]`` overrides; ``budget``: the config model;
- ``routes``: ``GET /usage`` and ``GET /usage/me``; ``runs``: a run's account from the config. These two
  read the config (and the OpenAPI table), whose schema imports ``budget``: import them by module path.

See docs/usage.md.
"""

from __future__ import annotations

from chatgate.usage.accounts import BudgetExceeded, BudgetScope, PersonBudget, RunAccount, UsageAccounts
from chatgate.usage.budget import Budget
from chatgate.usage.pricing import PriceConfig, Pricing
from chatgate.usage.tokens import RunUsage

__all__ = [
    "Budget",
    "BudgetExceeded",
    "BudgetScope",
    "PersonBudget",
    "PriceConfig",
    "Pricing",
    "RunAccount",
    "RunUsage",
    "UsageAccounts",
]

"""Usage, cost and budgets: what each run consumed, what it cost, and who may spend more.

- ``accounts``: ``UsageAccounts`` (the app's) and ``RunAccount`` (one run's), the one place that
  records usage and checks budgets before a model call;
- ``ledger``: one row per run, in the store or in memory; ``feedback``: a person's score of a run, beside
  it; ``counters``: spend per budget window, in
  Redis or in memory; ``holds``: a model call's reservation, and the Lua step that settles, judges and
  reserves (``BUDGET_LUA``, also run by the access layer's slot script); ``pricing``: genai-prices and
  ``[pricing]`` overrides;
- ``runs``: a run's account from the config. The budget and price models are the config's
  (app/config/budget.py); ``GET /usage`` and ``GET /usage/me`` are the app's (app/web/usage.py).

See docs/usage.md.
"""

from __future__ import annotations

from chatgate.usage.accounts import BudgetExceeded, BudgetScope, PersonBudget, RunAccount, UsageAccounts, person_of
from chatgate.usage.experiment import DECISION_PROBABILITY, Experiment, VariantTally, compare_variants, opinion
from chatgate.usage.feedback import (
    Feedback,
    FeedbackTally,
    RunOwner,
    valid_scores,
)
from chatgate.usage.holds import BUDGET_LUA
from chatgate.usage.ledger import GROUPS, Group, UsageRecord
from chatgate.usage.pricing import Pricing
from chatgate.usage.runs import run_account, side_account
from chatgate.usage.tokens import RunUsage

__all__ = [
    "BUDGET_LUA",
    "DECISION_PROBABILITY",
    "GROUPS",
    "BudgetExceeded",
    "BudgetScope",
    "Experiment",
    "Feedback",
    "FeedbackTally",
    "Group",
    "PersonBudget",
    "Pricing",
    "RunAccount",
    "RunOwner",
    "RunUsage",
    "UsageAccounts",
    "UsageRecord",
    "VariantTally",
    "compare_variants",
    "opinion",
    "person_of",
    "run_account",
    "side_account",
    "valid_scores",
]

"""A run's ``RunAccount`` from the config in force: its key's and agent's budgets, its provider's kind.

Kept apart from ``accounts`` because it reads the config, whose schema imports ``usage.budget``.
"""

from __future__ import annotations

from chatgate.caller import Caller
from chatgate.config import Config, resolve_provider
from chatgate.ids import new_id
from chatgate.run_input import RunInput
from chatgate.usage.accounts import RunAccount, UsageAccounts

__all__ = ["run_account"]


def run_account(
    accounts: UsageAccounts, config: Config, caller: Caller, agent_name: str, run_input: RunInput
) -> RunAccount:
    """The account of one run of ``caller`` on ``agent_name``."""
    agent = config.agents[agent_name]
    key_budget = None
    if caller.key_id is not None:
        key_budget = next((key.budget for key in config.keys if key.id == caller.key_id), None)
    kind: str | None = None
    if agent.provider_name != "builtin":
        try:
            kind = resolve_provider(config, agent.provider_name).kind
        except ValueError:
            kind = None
    return RunAccount(
        accounts,
        caller,
        agent=agent_name,
        model=agent.model,
        provider_kind=kind,
        thread_id=run_input.thread_id or None,
        run_id=run_input.run_id or new_id("run"),
        budgets=accounts.budgets(caller, agent_name, key_budget, agent.budget),
    )

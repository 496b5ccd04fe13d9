"""A run's ``RunAccount`` from the config in force: its budgets, its provider's kind, what each call reserves.

Kept apart from ``accounts`` because it reads the config, whose schema imports ``usage.budget``.
"""

from __future__ import annotations

from chatgate.caller import Caller
from chatgate.config import MICRO_USD, AgentConfig, Budget, Config, answer_tokens, resolve_provider
from chatgate.ids import new_id
from chatgate.run_input import RunInput
from chatgate.token_estimates import estimate
from chatgate.usage.accounts import RunAccount, UsageAccounts
from chatgate.usage.counters import Spend

__all__ = ["run_account", "side_account"]


def run_account(
    accounts: UsageAccounts,
    config: Config,
    caller: Caller,
    agent_name: str,
    run_input: RunInput,
    agent: AgentConfig | None = None,
) -> RunAccount:
    """The account of one run of ``caller`` on ``agent_name`` (configured as ``agent``: a variant's, else its own)."""
    agent = agent or config.agents[agent_name]
    kind = _kind(config, agent.provider_name)
    budgets = accounts.budgets(caller, agent_name, _key_budget(config, caller), agent.budget)
    reserve = _reserve(accounts, config, agent, kind, run_input) if budgets else Spend()
    return RunAccount(
        accounts,
        caller,
        agent=agent_name,
        model=agent.model,
        provider_kind=kind,
        thread_id=run_input.thread_id or None,
        run_id=run_input.run_id or new_id("run"),
        budgets=budgets,
        reserve=reserve,
        hold_seconds=config.budgets.hold_seconds,
    )


def side_account(
    accounts: UsageAccounts, config: Config, caller: Caller, agent_name: str, model: str, *, thread_id: str, run_id: str
) -> RunAccount:
    """The account of a call beside a run (a thread's title) to ``model``: the run's budgets, nothing reserved.

    It is checked against the budgets before the call (one already spent refuses it) and recorded as its
    own ledger row, under ``run_id``.
    """
    agent = config.agents[agent_name]
    return RunAccount(
        accounts,
        caller,
        agent=agent_name,
        model=model,
        provider_kind=_kind(config, model.split(":", 1)[0]),
        thread_id=thread_id,
        run_id=run_id,
        budgets=accounts.budgets(caller, agent_name, _key_budget(config, caller), agent.budget),
        hold_seconds=config.budgets.hold_seconds,
    )


def _key_budget(config: Config, caller: Caller) -> Budget | None:
    if caller.key_id is None:
        return None
    return next((key.budget for key in config.keys if key.id == caller.key_id), None)


def _kind(config: Config, provider_name: str) -> str | None:
    """The kind of the provider named ``provider_name`` (None: the built-in one, or not configured)."""
    if provider_name == "builtin":
        return None
    try:
        return resolve_provider(config, provider_name).kind
    except ValueError:
        return None


def _reserve(
    accounts: UsageAccounts, config: Config, agent: AgentConfig, kind: str | None, run_input: RunInput
) -> Spend:
    """What one model call of this run reserves: the request's messages as estimated, plus the answer's limit.

    The answer's limit is the agent's ``max_tokens`` (or its provider's name for it), else ``[budgets]
    reserve_output_tokens``; dollars are that usage at the model's price (none for an unpriced model).
    """
    input_tokens = sum(estimate(message) for message in run_input.messages)
    output_tokens = answer_tokens(agent.model_settings, config.budgets.reserve_output_tokens) or 0
    rates = accounts.pricing.rates(agent.model, kind)
    dollars = input_tokens * rates[0] + output_tokens * rates[1] if rates is not None else 0.0
    return Spend(input_tokens + output_tokens, round(dollars * MICRO_USD))

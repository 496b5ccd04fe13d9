"""Agents at run time: each configured agent bound to the provider that serves its model."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeAlias

import httpx

from chatgate.approvals import (
    AppApprovals,
    ApprovalLedger,
    ApprovalOutcome,
    ApprovalSigner,
    MemoryApprovalLedger,
    approval_scope,
    new_secret,
)
from chatgate.config import (
    AgentConfig,
    Config,
    FallbackConfig,
    answer_tokens,
    import_function,
    make_importable,
    resolve_provider,
)
from chatgate.context import ContextBudget, summary_model, window_probe
from chatgate.files import FileInliner
from chatgate.leak_guard import prepare_look_alikes
from chatgate.providers import ANTHROPIC_MAX_TOKENS, Provider, SideModel, build_provider, provider_of, side_model
from chatgate.run.failover import ChainEntry
from chatgate.run.health import ModelHealth
from chatgate.run.prompts import CodeSource, PromptFacts, PromptTemplate, Variable
from chatgate.run.tools import ServerTool, Tool, ToolSource
from chatgate.run_input import ToolDefinition

__all__ = ["Agent", "AgentRegistry", "ToolOutcomeEvent", "context_budget", "prompt_template"]

ToolOutcomeEvent: TypeAlias = ApprovalOutcome
"""What an answered approval produced; recorded so a replayed approval does not run a tool twice."""


@dataclass(frozen=True, slots=True)
class Agent:
    """One configured agent, ready to run.

    ``server_tools`` run inside chatgate; ``client_tools`` are tools the frontend runs that the agent
    declares itself (useChat requests carry no tool definitions). ``approvals`` signs and checks the
    tokens of tool calls that wait for a human; ``approval_ledger`` (the app's, shared by every agent
    and kept across reloads) makes each token run its tool at most once. ``approval_scope`` is whose
    approvals this run's are (``chatgate.approvals.approval_scope``): by default the agent's with no
    owner; a request sets its caller's (and its stored thread's), so that no other key, user or thread
    can answer them. ``prompt`` is the system
    prompt, rendered per request; by default it is built from ``config`` with paths relative to the
    working directory. ``context`` is its context budget (app/context/), None when no window is set;
    ``summary_model`` writes its summaries under ``strategy = "summarize"`` (app/context/summary_writer.py);
    ``title_model`` its stored threads' titles (app/threads/titles.py), None with ``titles = false``.
    ``files`` gives model calls the bytes of the uploads the history references (app/files/); a
    request sets its caller's, as it does ``approval_scope``. ``fallbacks`` are the models tried after
    ``provider``'s when a call fails (app/run/failover.py); ``deployments`` other deployments of its model,
    which with it form a pool whose ``weights`` pick one per run; ``chain`` is all of them in order (the
    pool, then the fallbacks), ``health`` the app's breaker that skips a failing one (app/run/health.py).
    ``variants`` are the agent as each of its ``[agents.NAME.variants.LABEL]`` (app/run/variants.py picks
    one per thread or person); ``variant`` is the label of the one this is ("" for the agent itself).
    ``prompt_facts`` names its prompt's version, hash and variant, worked out once as the agent is built.
    """

    name: str
    config: AgentConfig
    provider: Provider
    server_tools: Mapping[str, Tool] = field(default_factory=dict)
    client_tools: tuple[ToolDefinition, ...] = ()
    max_steps: int = 10
    approvals: ApprovalSigner = field(default_factory=lambda: ApprovalSigner(new_secret()))
    approval_ledger: ApprovalLedger = field(default_factory=MemoryApprovalLedger)
    prompt: PromptTemplate | None = None
    approval_scope: str = ""
    context: ContextBudget | None = None
    files: FileInliner | None = None
    summary_model: SideModel | None = None
    title_model: SideModel | None = None
    fallbacks: tuple[ChainEntry, ...] = ()
    health: ModelHealth | None = None
    deployments: tuple[ChainEntry, ...] = ()
    variants: Mapping[str, Agent] = field(default_factory=dict)
    variant: str = ""
    chain: tuple[ChainEntry, ...] = field(default=(), init=False)
    weights: tuple[float, ...] = field(default=(), init=False)
    prompt_facts: PromptFacts = field(default=PromptFacts(), init=False)

    def __post_init__(self) -> None:
        window = self.config.context.window
        first = ChainEntry(self.config.model, self.provider, self.config.model_settings, window=_known(window))
        object.__setattr__(self, "chain", (first, *self.deployments, *self.fallbacks))
        if self.deployments:  # the pool heads the chain: one deployment picked per run, by weight
            pool = (self.config.weight, *(entry.weight for entry in self.config.deployment_pool))
            object.__setattr__(self, "weights", pool)
        if not self.approval_scope:
            object.__setattr__(self, "approval_scope", approval_scope(self.name, ""))
        if self.prompt is None and self.config.system_prompt is not None:
            object.__setattr__(self, "prompt", prompt_template(self.config, Path.cwd()))
        prompt, variant = self.prompt, self.variant or None
        facts = PromptFacts(prompt.version, prompt.hash, variant) if prompt else PromptFacts(variant=variant)
        object.__setattr__(self, "prompt_facts", facts)


def _title_model(
    agent: AgentConfig, provider: Provider, config: Config, http_client: httpx.AsyncClient
) -> SideModel | None:
    """The model that titles the agent's stored threads: ``title_model``, else its own; None without titles."""
    if agent.conversations != "server" or not agent.titles:
        return None
    return side_model(agent, agent.title_model, provider, config, http_client)


def _known(window: int | str | None) -> int | None:
    return window if isinstance(window, int) else None


def _fallbacks(
    agent: AgentConfig, config: Config, http_client: httpx.AsyncClient, entries: Sequence[FallbackConfig]
) -> tuple[ChainEntry, ...]:
    """The agent's ``entries`` (its deployments or fallbacks), each with its provider and settings."""
    return tuple(
        ChainEntry(
            entry.model,
            provider_of(entry.model, config, http_client),
            agent.model_settings if entry.model_settings is None else entry.model_settings,
            window=entry.window,
        )
        for entry in entries
    )


def prompt_template(agent: AgentConfig, base_dir: Path) -> PromptTemplate | None:
    """The agent's system prompt as a template; relative paths start at ``base_dir``."""
    prompt = agent.system_prompt
    label = agent.version
    if prompt is None or isinstance(prompt, str):
        return PromptTemplate(prompt, label=label) if prompt else None

    make_importable(base_dir)  # imports in template code find modules beside the config

    def code(path: str | None) -> CodeSource | None:
        return CodeSource(path=base_dir / path) if path else None

    variables = {}
    for name, variable in prompt.variables.items():
        if isinstance(variable, str):
            variables[name] = Variable(name, text=variable)
            continue
        condition = variable.condition
        variables[name] = Variable(
            name,
            text=variable.text,
            files=tuple(base_dir / file for file in variable.files or ()),
            code=base_dir / variable.code if variable.code else None,
            inline_code=variable.inline_code,
            condition=(code(condition.code) or CodeSource(inline=condition.inline_code)) if condition else None,
            runtime_code=code(variable.runtime_code),
            client_overridable=variable.client_overridable,
        )
    return PromptTemplate(prompt.template, variables, code(prompt.runtime_code), timeout=prompt.timeout, label=label)


def _server_tools(agent: AgentConfig, base_dir: Path) -> dict[str, ServerTool]:
    return {
        name: ServerTool.from_function(
            name,
            import_function(tool.function, base_dir),
            description=tool.description,
            parameters=tool.parameters,
            timeout=tool.timeout,
            requires_approval=tool.requires_approval,
        )
        for name, tool in agent.tools.items()
    }


def context_budget(
    name: str, agent: AgentConfig, config: Config, http_client: httpx.AsyncClient
) -> ContextBudget | None:
    """The agent's context budget (``[agents.NAME.context]``), or None when no window is set."""
    context = agent.context
    if context.window is None:
        return None
    provider = None if agent.provider_name == "builtin" else resolve_provider(config, agent.provider_name)
    default_answer = ANTHROPIC_MAX_TOKENS if provider is not None and provider.kind == "anthropic" else None
    answer = answer_tokens(agent.model_settings, default_answer)
    if context.window != "auto":
        return ContextBudget(name, window=context.window, strategy=context.strategy, answer=answer)
    probe = window_probe(provider, agent.model_name, agent.model_settings, http_client) if provider else None
    return ContextBudget(name, window=None, strategy=context.strategy, answer=answer, probe=probe)


def _agent_tools(name: str, agent: AgentConfig, base_dir: Path, mcp: ToolSource | None) -> Mapping[str, Tool]:
    tools: dict[str, Tool] = dict(_server_tools(agent, base_dir))
    return mcp.agent_tools(name, agent, tools) if mcp is not None else tools


def _client_tools(agent: AgentConfig) -> tuple[ToolDefinition, ...]:
    return tuple(ToolDefinition(name, tool.description, tool.parameters) for name, tool in agent.client_tools.items())


def _built(
    name: str,
    agent: AgentConfig,
    config: Config,
    http_client: httpx.AsyncClient,
    signer: ApprovalSigner,
    kept: AppApprovals,
    mcp: ToolSource | None,
    health: ModelHealth | None,
    variant: str = "",
) -> Agent:
    """The agent ``name`` as configured (or as its ``variant``), with its variants built the same way."""
    provider = build_provider(agent, config, http_client)
    variants = {
        label: _built(name, _variant_config(agent, label), config, http_client, signer, kept, mcp, health, label)
        for label in agent.variants
    }
    return Agent(
        name,
        agent,
        provider,
        server_tools=_agent_tools(name, agent, config.base_dir, mcp),
        client_tools=_client_tools(agent),
        max_steps=agent.max_steps,
        approvals=signer,
        approval_ledger=kept.ledger,
        prompt=prompt_template(agent, config.base_dir),
        context=context_budget(name, agent, config, http_client),
        summary_model=summary_model(agent, provider, config, http_client),
        title_model=_title_model(agent, provider, config, http_client),
        fallbacks=_fallbacks(agent, config, http_client, agent.fallback_chain),
        health=health,
        deployments=_fallbacks(agent, config, http_client, agent.deployment_pool),
        variants=variants,
        variant=variant,
    )


def _variant_config(agent: AgentConfig, label: str) -> AgentConfig:
    """The agent's config as its variant ``label``: that prompt, version label, and model if it names one."""
    variant = agent.variants[label]
    update: dict[str, object] = {"system_prompt": variant.system_prompt, "version": variant.version, "variants": {}}
    if variant.model is not None:
        update["model"] = variant.model
    if variant.model_settings is not None:
        update["model_settings"] = variant.model_settings
    return agent.model_copy(update=update)


class AgentRegistry:
    """The agents of one config, looked up by name; the default agent serves the short routes.

    ``approvals`` is the app's (one per app, outliving reloads): building a registry with it warns when
    the config has approvals to answer and no shared ledger. By default the registry has its own.
    ``mcp`` is the app's MCP servers (started with the app): agents get the tools they choose of them.
    ``health`` is the app's fallback breaker (kept across reloads); without one, chains skip no model.
    """

    def __init__(
        self,
        config: Config,
        http_client: httpx.AsyncClient,
        approvals: AppApprovals | None = None,
        mcp: ToolSource | None = None,
        health: ModelHealth | None = None,
    ) -> None:
        self.config = config
        if approvals is not None:
            approvals.warn_if_unshared(config)
        kept = approvals if approvals is not None else AppApprovals()
        signer = kept.signer(config)
        self._agents: Mapping[str, Agent] = {
            name: _built(name, agent, config, http_client, signer, kept, mcp, health)
            for name, agent in config.agents.items()
        }
        if any(agent.leak_guard_mode != "off" for agent in config.agents.values()):
            prepare_look_alikes()  # 0.2-0.3 s once a process, at start or reload rather than in a first answer

    def get(self, name: str) -> Agent | None:
        """The agent called ``name``, or None."""
        return self._agents.get(name)

    @property
    def default(self) -> Agent | None:
        """The default agent, or None when the config names none."""
        name = self.config.default_agent
        return self._agents[name] if name is not None else None

    def __iter__(self) -> Iterator[Agent]:
        return iter(self._agents.values())

    async def aclose(self) -> None:
        """Release every provider."""
        for agent in self._agents.values():
            for one in (agent, *agent.variants.values()):
                for entry in one.chain:
                    await entry.provider.aclose()

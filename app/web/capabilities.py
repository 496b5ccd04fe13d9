"""``GET {protocol route}/capabilities``: what an agent can do, for protocols that describe agents (AG-UI).

``/agents/{agent}/ag-ui/capabilities`` and, for the default agent, ``/ag-ui/capabilities`` answer the
agent's ``AgentFacts`` (app/protocol.py) as the protocol's document: AG-UI's ``AgentCapabilities``,
which ``HttpAgent.getCapabilities()`` reads. The route needs what the agent's chat route needs (a key
that may use the agent); it calls no model.
"""

from __future__ import annotations

import importlib.metadata
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Route

from chatgate.access import resolve_agent
from chatgate.caller import caller_of
from chatgate.config import Config
from chatgate.protocol import AgentFacts, DescribesAgents, InputKind, UIProtocol
from chatgate.run import Agent
from chatgate.run_input import ToolDefinition
from chatgate.web.openapi import OPERATIONS, Operation
from chatgate.web.services import running_of

__all__ = ["agent_facts", "capabilities_path", "capabilities_routes"]

# What each provider kind is sent of a user's attachments (app/providers/: the others fail the call).
_INPUTS: Mapping[str, frozenset[InputKind]] = {
    "openai": frozenset({"image", "audio", "pdf"}),
    "anthropic": frozenset({"image", "pdf"}),
    "ollama": frozenset({"image"}),
    "builtin": frozenset(),
}
# The model setting that turns reasoning on, per provider kind.
_REASONING_SETTING = {"openai": "reasoning_effort", "anthropic": "thinking", "ollama": "think", "builtin": "reasoning"}


def capabilities_path(protocol: UIProtocol, agent: str) -> str | None:
    """Where ``agent``'s capabilities are for ``protocol``, or None when the protocol describes no agent."""
    return f"/agents/{agent}/{protocol.route}/capabilities" if isinstance(protocol, DescribesAgents) else None


def capabilities_routes(protocols: Sequence[UIProtocol]) -> list[BaseRoute]:
    """The capabilities routes of every protocol that can describe an agent."""
    routes: list[BaseRoute] = []
    for protocol in protocols:
        if not isinstance(protocol, DescribesAgents):
            continue
        endpoint = _endpoint(protocol)
        for path in (f"/agents/{{agent}}/{protocol.route}/capabilities", f"{protocol.default_path}/capabilities"):
            routes.append(Route(path, endpoint, methods=["GET"]))
            OPERATIONS[("GET", path)] = Operation(f"What the agent can do, as {protocol.name} describes an agent")
    return routes


def _endpoint(protocol: DescribesAgents) -> Callable[[Request], Any]:
    async def capabilities(request: Request) -> Response:
        registry = running_of(request).agents
        agent = resolve_agent(registry, request.path_params.get("agent"), caller_of(request))
        return JSONResponse(dict(protocol.capabilities(agent_facts(agent, registry.config))))

    return capabilities


def agent_facts(agent: Agent, config: Config) -> AgentFacts:
    """``agent``'s capabilities as its config decides them."""
    settings = agent.config
    kind = _provider_kind(config, settings.provider_name)
    approvals = any(tool.requires_approval for tool in agent.server_tools.values())
    reasoning_setting = settings.model_settings.get(_REASONING_SETTING.get(kind, ""))
    reasoning = bool(reasoning_setting) if reasoning_setting is not None else (None if kind == "openai" else False)
    own_tools: dict[str, ToolDefinition] = {name: tool.definition for name, tool in agent.server_tools.items()}
    for tool in agent.client_tools:
        own_tools.setdefault(tool.name, tool)
    return AgentFacts(
        name=agent.name,
        description=settings.description,
        version=importlib.metadata.version("chatgate"),
        resumable=settings.conversations == "server",
        tools=tuple(own_tools.values()),
        client_tools=True,
        approvals=approvals,
        reasoning=reasoning,
        encrypted_reasoning=kind == "anthropic" and bool(reasoning_setting),
        inputs=_INPUTS.get(kind, frozenset()),
        memory=settings.conversations == "server",
        max_steps=agent.max_steps,
    )


def _provider_kind(config: Config, provider: str) -> str:
    """``openai``, ``anthropic``, ``ollama`` or ``builtin``: a ``[providers.NAME]`` table's kind, or the name."""
    table = config.providers.get(provider)
    return table.kind if table is not None else provider

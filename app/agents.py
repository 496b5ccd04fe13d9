"""Agents at run time: each configured agent bound to the provider that serves its model."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass

import httpx

from app.config import AgentConfig, Config
from app.providers import Provider, build_provider

__all__ = ["Agent", "AgentRegistry"]


@dataclass(frozen=True, slots=True)
class Agent:
    """One configured agent, ready to run."""

    name: str
    config: AgentConfig
    provider: Provider


class AgentRegistry:
    """The agents of one config, looked up by name; the default agent serves the short routes."""

    def __init__(self, config: Config, http_client: httpx.AsyncClient) -> None:
        self.config = config
        self._agents: Mapping[str, Agent] = {
            name: Agent(name, agent, build_provider(agent, config, http_client))
            for name, agent in config.agents.items()
        }

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
            await agent.provider.aclose()

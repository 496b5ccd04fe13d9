"""Building a real provider against a fake upstream, and collecting what it streams."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from chatgate.config import AgentConfig, Config, ProviderConfig
from chatgate.events import RunEvent
from chatgate.history import Message
from chatgate.providers import Provider, build_provider
from chatgate.providers.base import ModelRequest
from chatgate.providers.client import upstream_client
from chatgate.run.agents import Agent
from chatgate.run.runner import run_agent
from chatgate.run_input import RunInput

FAST = {"connect": 2.0, "first_token": 5.0, "idle": 5.0}


def provider_table(kind: str, url: str, **table: Any) -> dict[str, Any]:
    """A ``[providers.up]`` table pointing at a fake upstream, with short timeouts."""
    return {"kind": kind, "base_url": url, "api_key": "sk-test", "timeouts": FAST, "retries": 0, **table}


@asynccontextmanager
async def provider(kind: str, url: str, **table: Any) -> AsyncIterator[Provider]:
    """A real provider of ``kind`` on its own upstream client (as the server makes it), talking to ``url``."""
    config = Config(providers={"up": ProviderConfig.model_validate(provider_table(kind, url, **table))})
    async with upstream_client() as client:
        yield build_provider(AgentConfig(model="up:m"), config, client)


async def collect(stream: AsyncIterator[RunEvent]) -> list[RunEvent]:
    return [event async for event in stream]


async def stream_once(kind: str, url: str, messages: tuple[Message, ...], **table: Any) -> list[RunEvent]:
    async with provider(kind, url, **table) as model:
        return await collect(model.stream(ModelRequest("m", messages)))


def agent_on(model: Provider, **agent_config: Any) -> Agent:
    return Agent("helper", AgentConfig(model="up:m", **agent_config), model)


async def run_events(kind: str, url: str, messages: tuple[Message, ...], **agent_config: Any) -> list[RunEvent]:
    """A whole run through the runner, as the server does it."""
    async with provider(kind, url) as model:
        return await collect(run_agent(agent_on(model, **agent_config), RunInput(messages)))

"""Upstream model APIs behind one interface, and the factory that builds them from config."""

from __future__ import annotations

import httpx

from app.config import AgentConfig, Config
from app.errors import ConfigError
from app.providers.base import ModelRequest, Provider
from app.providers.builtin import EchoModel

__all__ = ["ModelRequest", "Provider", "build_provider"]


def build_provider(agent: AgentConfig, config: Config, http_client: httpx.AsyncClient) -> Provider:
    """The provider that serves ``agent.model``, sharing the process-wide ``http_client``."""
    if agent.provider_name == "builtin":
        return EchoModel()
    raise ConfigError([f"model {agent.model!r}: unknown provider {agent.provider_name!r}"])

"""Upstream model APIs behind one interface, and the factory that builds them from config.

One module per wire API: ``openai`` (Chat Completions and compatible servers), ``anthropic``
(Messages), ``ollama`` (``/api/chat``), plus ``builtin`` (the echo model). What they share: ``http``
(sending with retries and the errors it raises), ``watchdog`` (first-token and idle deadlines),
``bodies`` (reading SSE and NDJSON bodies), ``client`` (the one HTTP client, on ``transport``'s
connections, with ``proxies`` from the environment), ``refusals`` (each upstream's "too long" as one
``context_length_exceeded`` error), ``parts`` and ``spans``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

import httpx

from chatgate.config import AgentConfig, Config, ProviderConfig, resolve_provider
from chatgate.errors import ConfigError
from chatgate.providers.anthropic import DEFAULT_MAX_TOKENS as ANTHROPIC_MAX_TOKENS
from chatgate.providers.anthropic import AnthropicProvider
from chatgate.providers.base import ModelRequest, Provider
from chatgate.providers.builtin import EchoModel
from chatgate.providers.client import upstream_client
from chatgate.providers.ollama import OllamaProvider
from chatgate.providers.openai import OpenAIProvider
from chatgate.providers.refusals import CONTEXT_FULL, CONTEXT_LENGTH_EXCEEDED, context_full, is_length_refusal
from chatgate.providers.side_call import SideModel, side_answer

__all__ = [
    "ANTHROPIC_MAX_TOKENS",
    "CONTEXT_FULL",
    "CONTEXT_LENGTH_EXCEEDED",
    "ModelRequest",
    "Provider",
    "SideModel",
    "build_provider",
    "context_full",
    "is_length_refusal",
    "provider_of",
    "side_answer",
    "side_model",
    "upstream_client",
]

PROVIDER_KINDS: Mapping[str, Callable[[str, ProviderConfig, httpx.AsyncClient], Provider]] = {
    "openai": OpenAIProvider,
    "anthropic": AnthropicProvider,
    "ollama": OllamaProvider,
}


def build_provider(agent: AgentConfig, config: Config, http_client: httpx.AsyncClient) -> Provider:
    """The provider that serves ``agent.model``, sharing the process-wide ``http_client``.

    A provider name is a ``[providers.NAME]`` table, or one of the built-in names ``builtin``,
    ``openai``, ``anthropic`` and ``ollama`` (these three configured from the environment).
    """
    return provider_of(agent.model, config, http_client)


def provider_of(model: str, config: Config, http_client: httpx.AsyncClient) -> Provider:
    """The provider that serves ``model`` (``provider:model``), as ``build_provider`` finds it."""
    name = model.split(":", 1)[0]
    if name == "builtin":
        return EchoModel()
    try:
        settings = resolve_provider(config, name)
    except ValueError as exc:
        raise ConfigError([f"model {model!r}: {exc}"]) from None
    return PROVIDER_KINDS[settings.kind](name, settings, http_client)


def side_model(
    agent: AgentConfig, named: str | None, provider: Provider, config: Config, http_client: httpx.AsyncClient
) -> SideModel:
    """The model of a side call (app/providers/side_call.py): ``named`` (``provider:model``), else the agent's.

    The agent's own model (``provider``) keeps its ``model_settings`` (an Ollama ``num_ctx``, an
    ``extra_body`` still apply); a named model gets none of them, as they belong to the agent's provider.
    """
    if named is None:
        return SideModel(provider, agent.model_name, agent.model, agent.model_settings)
    return SideModel(provider_of(named, config, http_client), named.split(":", 1)[1], named)

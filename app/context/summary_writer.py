"""The summary call: one model call, with a fixed instruction and a transcript, never the system prompt."""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import httpx

from chatgate.config import AgentConfig, Config
from chatgate.context.summary import ContextSummary, summary_prompt
from chatgate.errors import ProviderError
from chatgate.events import TextDelta, Usage
from chatgate.history import Message
from chatgate.providers import ModelRequest, Provider, build_provider
from chatgate.token_estimates import estimate

__all__ = ["SummaryModel", "summary_model", "write_summary"]

_ANSWER_KEYS = ("max_tokens", "max_completion_tokens", "num_predict")


@dataclass(frozen=True, slots=True)
class SummaryModel:
    """The model that writes an agent's summaries: its provider, the name it is known by there, and its settings.

    ``label`` is the ``provider:model`` string recorded with each summary; ``settings`` the
    ``model_settings`` its calls take, before their answer limit is set.
    """

    provider: Provider
    model: str
    label: str
    settings: Mapping[str, Any] = field(default_factory=dict)


def summary_model(
    agent: AgentConfig, provider: Provider, config: Config, http_client: httpx.AsyncClient
) -> SummaryModel | None:
    """The agent's summary writer under ``summarize`` (None under any other strategy).

    Without ``summary_model`` it is the agent's own model with its ``model_settings`` (an Ollama
    ``num_ctx``, an ``extra_body`` still apply); a ``summary_model`` (``provider:model``, named as an
    agent's ``model`` is) gets none of them, as they belong to the agent's provider.
    """
    context = agent.context
    if context.strategy != "summarize" or context.window is None:
        return None
    if context.summary_model is None:
        return SummaryModel(provider, agent.model_name, agent.model, agent.model_settings)
    other = agent.model_copy(update={"model": context.summary_model, "model_settings": {}})
    return SummaryModel(build_provider(other, config, http_client), other.model_name, other.model)


async def write_summary(
    writer: SummaryModel,
    previous: ContextSummary | None,
    messages: Sequence[Message],
    *,
    through: str,
    covered: int,
    max_tokens: int,
    max_chars: int,
) -> tuple[ContextSummary, Usage | None]:
    """Fold ``messages`` into ``previous``: the new summary (covering through ``through``) and the call's usage.

    Raises ``ProviderError`` when the call fails or answers nothing.
    """
    settings = {key: value for key, value in writer.settings.items() if key not in _ANSWER_KEYS}
    answer_key = next((key for key in _ANSWER_KEYS if key in writer.settings), "max_tokens")
    settings[answer_key] = max_tokens
    request = ModelRequest(writer.model, summary_prompt(previous, messages, max_chars), settings=settings)
    parts: list[str] = []
    usage: Usage | None = None
    stream = writer.provider.stream(request)
    try:
        async for event in stream:
            if type(event) is TextDelta:
                parts.append(event.delta)
            elif type(event) is Usage:
                usage = event
    finally:
        aclose = getattr(stream, "aclose", None)
        if aclose is not None:
            await aclose()
    text = "".join(parts).strip()
    if not text:
        raise ProviderError("the summary call answered no text", public_message="No summary.", kind="interrupted")
    summary = ContextSummary(text, through, covered, 0, writer.label, time.time())
    tokens = usage.output_tokens if usage is not None and usage.output_tokens else estimate(summary.pair[1])
    return ContextSummary(text, through, covered, tokens, writer.label, summary.created_at), usage

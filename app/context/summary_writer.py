"""The summary call: one model call, with a fixed instruction and a transcript, never the system prompt."""

from __future__ import annotations

import time
from collections.abc import Sequence

import httpx

from chatgate.config import AgentConfig, Config
from chatgate.context.summary import ContextSummary, summary_prompt
from chatgate.errors import ProviderError
from chatgate.events import Usage
from chatgate.history import Message
from chatgate.providers import Provider, SideModel, side_answer, side_model
from chatgate.token_estimates import estimate

__all__ = ["summary_model", "write_summary"]


def summary_model(
    agent: AgentConfig, provider: Provider, config: Config, http_client: httpx.AsyncClient
) -> SideModel | None:
    """The agent's summary writer under ``summarize`` (None under any other strategy).

    Without ``summary_model`` it is the agent's own model with its ``model_settings``; a
    ``summary_model`` (``provider:model``, named as an agent's ``model`` is) gets none of them.
    """
    context = agent.context
    if context.strategy != "summarize" or context.window is None:
        return None
    return side_model(agent, context.summary_model, provider, config, http_client)


async def write_summary(
    writer: SideModel,
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
    text, usage = await side_answer(writer, summary_prompt(previous, messages, max_chars), max_tokens)
    if not text:
        raise ProviderError("the summary call answered no text", public_message="No summary.", kind="interrupted")
    summary = ContextSummary(text, through, covered, 0, writer.label, time.time())
    tokens = usage.output_tokens if usage is not None and usage.output_tokens else estimate(summary.pair[1])
    return ContextSummary(text, through, covered, tokens, writer.label, summary.created_at), usage

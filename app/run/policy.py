"""``manage_system_prompt``: who decides what the model is told to be.

``server`` (the default) removes every system-voice message the client sent, drops any message left
empty, logs one warning with the count, and puts the agent's own prompt first. ``client`` passes the
client's messages through untouched and injects nothing, unless ``fallback`` is set and the client
sent no system message. The function is pure: it returns a new tuple and never mutates its input.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from chatgate.config import SystemPromptPolicy
from chatgate.history import Message, SystemMessage

__all__ = ["PolicyResult", "SystemPromptPolicy", "apply_system_prompt_policy"]

logger = logging.getLogger("chatgate.policy")


@dataclass(frozen=True, slots=True)
class PolicyResult:
    """The history the model will see and how many client system messages were removed."""

    messages: tuple[Message, ...]
    stripped: int


def apply_system_prompt_policy(
    messages: tuple[Message, ...],
    *,
    policy: SystemPromptPolicy,
    system_prompt: str | None,
    fallback: bool = False,
    agent_name: str = "",
) -> PolicyResult:
    """Return the history under ``policy`` with ``system_prompt`` (already rendered) placed as it says."""
    if policy == "client":
        has_client_prompt = any(isinstance(message, SystemMessage) for message in messages)
        if fallback and not has_client_prompt and system_prompt:
            return PolicyResult((SystemMessage(content=system_prompt), *messages), 0)
        return PolicyResult(tuple(messages), 0)

    # System-voice content only ever lives in SystemMessage, so removing those removes all of it;
    # the other message types are kept as the same (immutable) objects.
    kept: tuple[Message, ...] = tuple(message for message in messages if not isinstance(message, SystemMessage))
    stripped = len(messages) - len(kept)
    if stripped:
        logger.warning(
            "agent %r: removed %d client system message(s) under manage_system_prompt='server'",
            agent_name,
            stripped,
        )
    if system_prompt:
        kept = (SystemMessage(content=system_prompt, id="system"), *kept)
    return PolicyResult(kept, stripped)

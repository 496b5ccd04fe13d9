"""``AgentFacts``: one agent's capabilities as the config decides them, for any protocol to describe."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, TypeAlias

from chatgate.run_input import ToolDefinition

__all__ = ["AgentFacts", "InputKind"]

InputKind: TypeAlias = Literal["image", "audio", "video", "pdf", "file"]
"""A kind of attachment a user message can carry."""


@dataclass(frozen=True, slots=True)
class AgentFacts:
    """What a client may rely on when it talks to one agent; nothing here is the prompt or a secret.

    ``tools`` are the tools the agent itself offers (its server tools, then the frontend tools it
    declares); ``client_tools`` whether a request's own tools are offered too. ``reasoning`` is None
    when the config does not say whether the model reasons (an OpenAI-compatible server may or may not
    stream it); ``inputs`` the attachment kinds its provider is sent (others fail the run).
    """

    name: str
    description: str
    version: str
    resumable: bool
    tools: tuple[ToolDefinition, ...]
    client_tools: bool
    approvals: bool
    reasoning: bool | None
    encrypted_reasoning: bool
    inputs: frozenset[InputKind]
    memory: bool
    max_steps: int

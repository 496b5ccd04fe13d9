"""Roles the model accepts: what is sent never holds two messages of the same role in a row.

Strict chat templates (Gemma, Mistral, Llama-2 style, on llama.cpp and vLLM alike) refuse a history
whose user and assistant turns do not alternate. Two things produce one:

- a turn that failed before the model said anything leaves its user message unanswered in the thread,
  and the next turn adds another user message right after it;
- a useChat app that seeds a greeting starts the history with the assistant.

``alternate_roles`` rewrites the model's view only (the store keeps every message as it was):

- consecutive user messages become one, their parts in order (its id is the newest one's);
- an assistant message with neither text nor tool calls (an answer that said nothing, or only
  reasoning) right before a user message is left out, so the user turns around it become one;
- consecutive assistant messages become one, parts in order (reasoning kept with what follows it),
  unless the first made tool calls (its results belong between them);
- consecutive system messages (the agent's prompt, the client's instructions, the leak guard's
  canary) become one, their texts joined by a blank line (Gemma's template takes one system message
  and refuses a second as a turn out of order);
- a history whose first turn after the system messages is the assistant's gets a short user turn
  before it, ``HISTORY_START`` (Anthropic's API requires a user turn first, too).

System and tool messages stay where they are; each provider places them as its API wants.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TypeGuard

from chatgate.history import (
    HISTORY_START,
    AssistantMessage,
    Message,
    SystemMessage,
    TextPart,
    ToolCallPart,
    ToolMessage,
    UserMessage,
)

__all__ = ["HISTORY_START", "alternate_roles"]

"""The user turn put before a history whose first turn is the assistant's."""


def alternate_roles(messages: Sequence[Message]) -> tuple[Message, ...]:
    """``messages`` as the model may see them: user and assistant turns alternate. See the module docstring."""
    # Called before every model call on the whole history: one pass of type checks (message classes
    # are final), and the same tuple back when nothing needs changing, which is nearly always.
    previous: type | None = None
    for index, message in enumerate(messages):
        kind = type(message)
        if kind is previous and kind is not ToolMessage:
            break
        if kind is AssistantMessage and (previous is None or previous is SystemMessage):
            break
        if kind is UserMessage and previous is AssistantMessage and not _says_something(messages[index - 1]):  # type: ignore[arg-type]
            break
        previous = kind
    else:
        return messages if isinstance(messages, tuple) else tuple(messages)
    return _rewritten(messages)


def _rewritten(messages: Sequence[Message]) -> tuple[Message, ...]:
    out: list[Message] = []
    for message in messages:
        previous = out[-1] if out else None
        if isinstance(message, UserMessage):
            if isinstance(previous, AssistantMessage) and not _says_something(previous):
                out.pop()  # an answer that said nothing
                previous = out[-1] if out else None
            if isinstance(previous, UserMessage):
                out[-1] = UserMessage(previous.parts + message.parts, id=message.id, created_at=message.created_at)
                continue
        elif isinstance(message, SystemMessage) and isinstance(previous, SystemMessage):
            content = f"{previous.content}\n\n{message.content}"
            out[-1] = SystemMessage(content, id=previous.id, role=previous.role, created_at=previous.created_at)
            continue
        elif isinstance(message, AssistantMessage) and _joins(previous):
            out[-1] = AssistantMessage(previous.parts + message.parts, id=message.id, created_at=message.created_at)
            continue
        out.append(message)
    first = next((i for i, message in enumerate(out) if not isinstance(message, SystemMessage)), len(out))
    if first < len(out) and isinstance(out[first], AssistantMessage):
        out.insert(first, UserMessage((TextPart(HISTORY_START),)))
    return tuple(out)


def _says_something(message: AssistantMessage) -> bool:
    """Whether an answer has text that is not blank, or a tool call."""
    for part in message.parts:
        kind = type(part)
        if kind is ToolCallPart:
            return True
        if kind is TextPart and part.text and not part.text.isspace():  # type: ignore[union-attr]
            return True
    return False


def _joins(previous: Message | None) -> TypeGuard[AssistantMessage]:
    """Whether an assistant message after ``previous`` becomes part of it: no tool results go between."""
    return isinstance(previous, AssistantMessage) and not previous.tool_calls

"""Token estimates without a tokenizer: about 4 characters a token, plus a few tokens per message.

The context budget (app/context/) scales them by what it learns from the upstream's reported counts;
usage (app/usage/) reserves a model call's budget from them before the call is made.
"""

from __future__ import annotations

from collections.abc import Sequence

from chatgate.history import AssistantMessage, Message, SourcePart, SystemMessage, TextPart, ToolCallPart, UserMessage
from chatgate.run_input import ToolDefinition

__all__ = ["estimate", "estimate_tools"]

_CHARS_PER_TOKEN = 4
_MESSAGE_OVERHEAD = 4  # role markers and separators a chat template adds around each message
_FILE_TOKENS = 1000  # an image or document: providers count these very differently; a cautious guess


def estimate(message: Message) -> int:
    """About how many tokens ``message`` takes in a prompt, before the learned correction."""
    kind = type(message)
    if kind is UserMessage:
        chars = 0
        files = 0
        for part in message.parts:  # type: ignore[union-attr]
            if type(part) is TextPart:
                chars += len(part.text)
            else:
                files += 1
        return chars // _CHARS_PER_TOKEN + files * _FILE_TOKENS + _MESSAGE_OVERHEAD
    if kind is AssistantMessage:
        chars = 0
        for part in message.parts:  # type: ignore[union-attr]
            if type(part) is ToolCallPart:
                chars += len(part.name) + len(part.arguments) + 16
            elif type(part) is SourcePart:
                continue  # never sent to a model
            else:
                chars += len(part.text)  # type: ignore[union-attr]
        return chars // _CHARS_PER_TOKEN + _MESSAGE_OVERHEAD
    if kind is SystemMessage:
        return len(message.content) // _CHARS_PER_TOKEN + _MESSAGE_OVERHEAD  # type: ignore[union-attr]
    return len(message.content) // _CHARS_PER_TOKEN + _MESSAGE_OVERHEAD + 8  # type: ignore[union-attr]


def estimate_tools(tools: Sequence[ToolDefinition]) -> int:
    """About how many tokens the tool definitions take, before the learned correction."""
    chars = sum(len(tool.name) + len(tool.description or "") + len(repr(tool.parameters)) for tool in tools)
    return chars // _CHARS_PER_TOKEN

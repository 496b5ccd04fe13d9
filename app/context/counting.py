"""Counting a prompt's tokens without a tokenizer: the upstream's own count, plus an estimate of what is new.

Each model call reports its input tokens (``Usage.input_tokens``). A thread's next prompt is the one
before plus what was added since, so its count is the reported count plus an estimate of the new
messages only; that costs nothing per stored message. Without a reported count (the first call of a
thread in this process, or the view changed), every message is estimated. The estimate is about 4
characters a token plus a few tokens per message, scaled by ``ratio`` (1.2 to begin with): reported
over estimated for the same prompt, learned from each real count, so a tokenizer that needs more
tokens per character is followed after a call or two. No tokenizer is ever downloaded.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass

from chatgate.history import AssistantMessage, Message, SourcePart, SystemMessage, TextPart, ToolCallPart, UserMessage
from chatgate.run_input import ToolDefinition

__all__ = ["Anchor", "TokenCounter", "estimate", "estimate_tools"]

_CHARS_PER_TOKEN = 4
_MESSAGE_OVERHEAD = 4  # role markers and separators a chat template adds around each message
_FILE_TOKENS = 1000  # an image or document: providers count these very differently; a cautious guess
_THREADS_KEPT = 4096
_LEARN_FROM = 32  # estimated tokens: a smaller new part is too noisy to learn the ratio from
_RATIO_RANGE = (0.25, 4.0)
_FIRST_RATIO = 1.2  # before any report: a little cautious, as denser tokenizers (code, most languages) need more


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


@dataclass(frozen=True, slots=True)
class Anchor:
    """What one call of a thread sent (``start``..``end`` of its history, by id) and the tokens it reported.

    ``left_out`` is how many turns before ``start`` that call left out (not counting those a summary
    covered); ``summary`` names the summary it sent (the id of the last message it covers), "" for none.
    """

    start: int
    start_id: str
    end: int
    end_id: str
    tokens: int
    left_out: int = 0
    summary: str = ""


class TokenCounter:
    """One agent's learned correction and each thread's last reported count (a bounded cache in memory)."""

    def __init__(self) -> None:
        self.ratio = _FIRST_RATIO
        self._anchors: OrderedDict[str, Anchor] = OrderedDict()

    def anchor(self, thread: str) -> Anchor | None:
        """The last reported count of ``thread``, if this process has one."""
        return self._anchors.get(thread) if thread else None

    def observe(self, thread: str, anchor: Anchor, *, known: int, estimated: int) -> None:
        """A call reported ``anchor.tokens``: ``known`` of them reported before, the rest estimated at ``estimated``."""
        if anchor.tokens <= 0:
            return  # an upstream that reports no usage teaches nothing
        if estimated >= _LEARN_FROM:
            # Weighted towards the newest count, so a drift is followed but one odd answer does not swing it.
            ratio = 0.5 * self.ratio + 0.5 * ((anchor.tokens - known) / estimated)
            self.ratio = min(max(ratio, _RATIO_RANGE[0]), _RATIO_RANGE[1])
        if thread:
            self._anchors[thread] = anchor
            self._anchors.move_to_end(thread)
            if len(self._anchors) > _THREADS_KEPT:
                self._anchors.popitem(last=False)

    def refused(self, thread: str) -> None:
        """The upstream refused a prompt we counted as fitting: count more cautiously from now on."""
        self.ratio = min(self.ratio * 1.25, _RATIO_RANGE[1])
        self._anchors.pop(thread, None)

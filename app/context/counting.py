"""Counting a prompt's tokens without a tokenizer: the upstream's own count, plus an estimate of what is new.

Each model call reports its input tokens (``Usage.input_tokens``). A thread's next prompt is the one
before plus what was added since, so its count is the reported count plus an estimate of the new
messages only; that costs nothing per stored message. Without a reported count (the first call of a
thread in this process, or the view changed), every message is estimated. The estimate is about 4
characters a token plus a few tokens per message (app/token_estimates.py), scaled by ``ratio`` (1.2 to
begin with): reported over estimated for the same prompt, learned from each real count, so a tokenizer that needs more
tokens per character is followed after a call or two. No tokenizer is ever downloaded.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass

__all__ = ["Anchor", "TokenCounter"]

_THREADS_KEPT = 4096
_LEARN_FROM = 32  # estimated tokens: a smaller new part is too noisy to learn the ratio from
_RATIO_RANGE = (0.25, 4.0)
_FIRST_RATIO = 1.2  # before any report: a little cautious, as denser tokenizers (code, most languages) need more


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

"""What one run consumed, summed over its model calls from the providers' own usage reports."""

from __future__ import annotations

from dataclasses import dataclass

from chatgate.events import Usage

__all__ = ["RunUsage"]


def _plus(total: int | None, more: int | None) -> int | None:
    if more is None:
        return total
    return more if total is None else total + more


@dataclass(slots=True)
class RunUsage:
    """Token counts of a run's model calls.

    ``reasoning_tokens`` and ``cached_input_tokens`` are None when no call reported them (never 0 by
    guess); ``unreported_calls`` counts the calls whose provider sent no usage at all.
    """

    calls: int = 0
    unreported_calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    reasoning_tokens: int | None = None
    cached_input_tokens: int | None = None

    def add(self, usage: Usage | None) -> None:
        """Count one model call and what it reported (None: nothing)."""
        self.calls += 1
        if usage is None:
            self.unreported_calls += 1
            return
        self.input_tokens += max(usage.input_tokens, 0)
        self.output_tokens += max(usage.output_tokens, 0)
        self.reasoning_tokens = _plus(self.reasoning_tokens, usage.reasoning_tokens)
        self.cached_input_tokens = _plus(self.cached_input_tokens, usage.cached_input_tokens)

    @property
    def reported(self) -> bool:
        """Whether any call reported usage."""
        return self.calls > self.unreported_calls

    @property
    def total_tokens(self) -> int:
        """Input plus output tokens (reasoning tokens are part of the output)."""
        return self.input_tokens + self.output_tokens

"""The provider interface every upstream (and the built-in model) implements."""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from chatgate.events import RunEvent
from chatgate.history import Message
from chatgate.run_input import ToolDefinition

__all__ = ["ModelRequest", "Provider"]


@dataclass(frozen=True, slots=True)
class ModelRequest:
    """Everything one model call gets: this is the provider boundary.

    ``messages`` is the history after the system-prompt policy, system messages included where the
    policy put them; each provider places them as its API wants.
    """

    model: str
    messages: tuple[Message, ...]
    tools: tuple[ToolDefinition, ...] = ()
    settings: Mapping[str, Any] = field(default_factory=dict)


class Provider(Protocol):
    """An upstream model API. ``stream`` yields content events, optionally ``Usage``, then ``ModelFinished``.

    It raises ``ProviderError`` on failure; cancellation of the iterator must close the upstream request.
    """

    name: str

    def stream(self, request: ModelRequest) -> AsyncIterator[RunEvent]:
        """Stream one model call's events."""
        ...

    async def aclose(self) -> None:
        """Release anything the provider holds."""
        ...

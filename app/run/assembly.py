"""``MessageAssembler``: folds one model call's events back into an ``AssistantMessage``.

The runner needs the assistant turn it just streamed to continue after server tools run, and a
server-held conversation needs it to store the answer. Parts keep the order in which they opened.
"""

from __future__ import annotations

from chatgate.events import (
    ReasoningDelta,
    ReasoningEnd,
    ReasoningStart,
    RunEvent,
    SourceCited,
    TextDelta,
    TextStart,
    ToolCallDelta,
    ToolCallEnd,
    ToolCallStart,
)
from chatgate.history import AssistantMessage, AssistantPart, ReasoningPart, SourcePart, TextPart, ToolCallPart

__all__ = ["MessageAssembler"]


class MessageAssembler:
    """Collects text, reasoning, tool calls and sources from events; ``message()`` returns what was said so far."""

    def __init__(self, message_id: str = "") -> None:
        self._message_id = message_id
        self._order: list[tuple[str, str]] = []  # (kind, id) in opening order
        self._text: dict[str, list[str]] = {}
        self._reasoning: dict[str, list[str]] = {}
        self._reasoning_data: dict[str, ReasoningEnd] = {}
        self._tool_names: dict[str, str] = {}
        self._tool_arguments: dict[str, list[str]] = {}
        self._tool_ends: dict[str, ToolCallEnd] = {}
        self._sources: dict[str, SourceCited] = {}

    def feed(self, event: RunEvent) -> None:
        """Take one event into account; events that are not content are ignored."""
        if isinstance(event, TextDelta):  # deltas first: they are nearly every event
            self._text[event.id].append(event.delta)
        elif isinstance(event, ReasoningDelta):
            self._reasoning[event.id].append(event.delta)
        elif isinstance(event, ToolCallDelta):
            self._tool_arguments[event.tool_call_id].append(event.delta)
        elif isinstance(event, TextStart):
            self._order.append(("text", event.id))
            self._text[event.id] = []
        elif isinstance(event, ReasoningStart):
            self._order.append(("reasoning", event.id))
            self._reasoning[event.id] = []
        elif isinstance(event, ReasoningEnd):
            self._reasoning_data[event.id] = event
        elif isinstance(event, ToolCallStart):
            self._order.append(("tool", event.tool_call_id))
            self._tool_names[event.tool_call_id] = event.name
            self._tool_arguments[event.tool_call_id] = []
        elif isinstance(event, ToolCallEnd):
            self._tool_ends[event.tool_call_id] = event
        elif isinstance(event, SourceCited):
            self._order.append(("source", event.source_id))
            self._sources[event.source_id] = event

    @property
    def tool_calls(self) -> tuple[ToolCallPart, ...]:
        """The completed tool calls, in order."""
        return tuple(part for part in self.message().parts if isinstance(part, ToolCallPart))

    def message(self) -> AssistantMessage:
        """The assistant message the events so far describe."""
        parts: list[AssistantPart] = []
        for kind, part_id in self._order:
            if kind == "text":
                parts.append(TextPart("".join(self._text[part_id])))
            elif kind == "reasoning":
                end = self._reasoning_data.get(part_id)
                data = end.provider_data if end is not None else None
                parts.append(ReasoningPart("".join(self._reasoning[part_id]), provider_data=data))
            elif kind == "source":
                source = self._sources[part_id]
                parts.append(SourcePart(source.source_id, source.url, source.title, source.media_type, source.filename))
            elif part_id in self._tool_ends:
                tool_end = self._tool_ends[part_id]
                arguments = tool_end.arguments or "".join(self._tool_arguments[part_id])
                parts.append(
                    ToolCallPart(part_id, self._tool_names[part_id], arguments, provider_data=tool_end.provider_data)
                )
        return AssistantMessage(tuple(parts), id=self._message_id)

"""``DeltaSpans``: text and reasoning spans for APIs that stream bare deltas (OpenAI, Ollama).

Those APIs send ``content`` and ``reasoning`` fragments with no start or end of their own; a span opens
at its first fragment and closes when the other kind, a tool call or the end of the answer comes.
"""

from __future__ import annotations

from chatgate.events import ReasoningEnd, ReasoningStart, RunEvent, TextEnd, TextStart
from chatgate.ids import new_id

__all__ = ["DeltaSpans"]


class DeltaSpans:
    """The open text span's id and the open reasoning span's id (``""`` when closed; one at most is open).

    The hot path reads ``text_id``/``reasoning_id`` directly; the methods run only when a span
    opens or closes.
    """

    __slots__ = ("reasoning_id", "text_id")

    def __init__(self) -> None:
        self.text_id = ""
        self.reasoning_id = ""

    def open_text(self) -> list[RunEvent]:
        """Close any reasoning span and open a text span (``text_id``)."""
        events = self.close()
        self.text_id = new_id("msg")
        events.append(TextStart(self.text_id))
        return events

    def open_reasoning(self) -> list[RunEvent]:
        """Close any text span and open a reasoning span (``reasoning_id``)."""
        events = self.close()
        self.reasoning_id = new_id("rs")
        events.append(ReasoningStart(self.reasoning_id))
        return events

    def close(self) -> list[RunEvent]:
        """Close whichever span is open."""
        events: list[RunEvent] = []
        if self.text_id:
            events.append(TextEnd(self.text_id))
            self.text_id = ""
        if self.reasoning_id:
            events.append(ReasoningEnd(self.reasoning_id))
            self.reasoning_id = ""
        return events

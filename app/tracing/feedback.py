"""Feedback on a run, in the run's trace: a ``feedback`` span under its ``invoke_agent`` span (docs/prompts.md).

Given when someone scores an answer whose run was traced (its usage row keeps the run span's ids): the
span carries the score, its opinion, the run's prompt version and variant, and a ``chatgate.feedback``
event with the same. Never the comment or the tags: they are the person's data.
"""

from __future__ import annotations

from typing import Any

from chatgate.tracing.setup import Telemetry

__all__ = ["trace_feedback"]


def trace_feedback(telemetry: Telemetry, trace_id: str, span_id: str, attributes: dict[str, Any]) -> None:
    """Record a ``feedback`` span under the run span ``span_id`` of trace ``trace_id`` (hex, as kept)."""
    span = telemetry.recorder.start_under("feedback", int(trace_id, 16), int(span_id, 16))
    span.attributes.update(attributes)
    span.add_event("chatgate.feedback", attributes)
    span.end()

"""Spans recorded as plain data and handed to the SDK's span processor as ``ReadableSpan``s when they end.

The SDK's own ``Span`` costs more than a run's spans need: every call takes a lock and cleans what it is
given, and ending one copies it into the ``ReadableSpan`` the processor takes. A ``RecordedSpan`` keeps
its name, ids, times, attributes, events and status in plain fields while it runs, and, as it ends,
builds that ``ReadableSpan`` once, with the tracer's resource and instrumentation scope, and gives it to
the tracer's span processor (the batch processor, then the OTLP exporter), as the SDK's ``Span.end``
does. The ids come from the tracer's id generator and the sampler decides once per run, for its root
(a frontend's ``traceparent`` is its parent, as ``ParentBased`` reads it); children follow the root.

Imported only when tracing is on (it needs the SDK).
"""

from __future__ import annotations

from time import time_ns
from typing import Any

from opentelemetry import trace
from opentelemetry.attributes import BoundedAttributes
from opentelemetry.context import Context
from opentelemetry.sdk.trace import Event, ReadableSpan
from opentelemetry.sdk.trace import Tracer as SdkTracer
from opentelemetry.sdk.trace.sampling import Decision
from opentelemetry.trace import SpanContext, SpanKind, Status, TraceFlags

__all__ = ["RecordedSpan", "SpanRecorder"]

_UNSET = Status()


class SpanRecorder:
    """What a recorded span takes from the app's SDK tracer: sampler, ids, resource, scope, limits, processor."""

    def __init__(self, tracer: trace.Tracer) -> None:
        if not isinstance(tracer, SdkTracer):
            raise TypeError(f"tracing needs the OpenTelemetry SDK's tracer, not {type(tracer).__name__}")
        self._sampler = tracer.sampler
        self._ids = tracer.id_generator
        self._resource = tracer.resource
        self._scope = tracer._instrumentation_scope  # what the SDK's spans carry; no public reader
        self._processor = tracer.span_processor
        limits = tracer._span_limits
        self._max_attributes = limits.max_span_attributes
        self._max_length = limits.max_span_attribute_length

    def start_run(self, name: str, kind: SpanKind, parent: Context | None) -> RecordedSpan:
        """A run's root span, sampled now: ``recording`` is False when the sampler drops it.

        ``parent`` is a frontend's extracted ``traceparent`` (its trace continues), or None.
        """
        parent_context = trace.get_current_span(parent).get_span_context()
        if parent_context.is_valid:
            trace_id = parent_context.trace_id
            random_trace_id = parent_context.trace_flags.random_trace_id
            parent_or_none: SpanContext | None = parent_context
        else:
            trace_id = self._ids.generate_trace_id()
            random_trace_id = self._ids.is_trace_id_random()
            parent_or_none = None
        sampled = self._sampler.should_sample(parent, trace_id, name, kind)
        decision = sampled.decision
        flags = TraceFlags.SAMPLED if decision is Decision.RECORD_AND_SAMPLE else TraceFlags.DEFAULT
        if random_trace_id:
            flags |= TraceFlags.RANDOM_TRACE_ID
        context = SpanContext(
            trace_id,
            self._ids.generate_span_id(),
            is_remote=False,
            trace_flags=TraceFlags(flags),
            trace_state=sampled.trace_state,
        )
        span = RecordedSpan(self, name, context, parent_or_none, kind, decision is not Decision.DROP)
        if sampled.attributes:
            span.attributes.update(sampled.attributes)
        return span

    def start_child(self, name: str, parent: RecordedSpan, kind: SpanKind = SpanKind.INTERNAL) -> RecordedSpan:
        """A span under ``parent`` (recorded whenever its run is: children follow the run's sampling)."""
        context = parent.context
        child = SpanContext(
            context.trace_id,
            self._ids.generate_span_id(),
            is_remote=False,
            trace_flags=context.trace_flags,
            trace_state=context.trace_state,
        )
        return RecordedSpan(self, name, child, context, kind, parent.recording)

    def start_under(self, name: str, trace_id: int, span_id: int) -> RecordedSpan:
        """A span under a span of an earlier request (a run's ``invoke_agent``, named by its ids), recorded."""
        parent = SpanContext(trace_id, span_id, is_remote=True, trace_flags=TraceFlags(TraceFlags.SAMPLED))
        child = SpanContext(
            trace_id, self._ids.generate_span_id(), is_remote=False, trace_flags=TraceFlags(TraceFlags.SAMPLED)
        )
        return RecordedSpan(self, name, child, parent, SpanKind.INTERNAL, True)

    def finish(self, span: RecordedSpan, end_time: int) -> None:
        """Hand ``span``, ended at ``end_time``, to the span processor as the SDK's ``ReadableSpan``."""
        attributes: Any = span.attributes
        max_attributes = self._max_attributes
        if self._max_length is not None or (max_attributes is not None and len(attributes) > max_attributes):
            attributes = BoundedAttributes(max_attributes, attributes, immutable=True, max_value_len=self._max_length)
        self._processor.on_end(
            ReadableSpan(
                name=span.name,
                context=span.context,
                parent=span.parent,
                resource=self._resource,
                attributes=attributes,
                events=span.events,
                kind=span.kind,
                status=span.status,
                start_time=span.start_time,
                end_time=end_time,
                instrumentation_scope=self._scope,
            )
        )


class RecordedSpan:
    """One span while it runs: its fields are plain data until ``end()`` hands it to the processor."""

    __slots__ = (
        "_ended",
        "_recorder",
        "attributes",
        "context",
        "events",
        "kind",
        "name",
        "parent",
        "recording",
        "start_time",
        "status",
    )

    def __init__(
        self,
        recorder: SpanRecorder,
        name: str,
        context: SpanContext,
        parent: SpanContext | None,
        kind: SpanKind,
        recording: bool,
    ) -> None:
        self._recorder = recorder
        self.name = name
        self.context = context
        self.parent = parent
        self.kind = kind
        self.recording = recording  # False: not sampled, never exported
        self.start_time = time_ns()
        self.attributes: dict[str, Any] = {}
        self.events: list[Event] = []
        self.status = _UNSET
        self._ended = False

    def add_event(self, name: str, attributes: dict[str, Any]) -> None:
        """Note an event now."""
        self.events.append(Event(name, attributes, time_ns()))

    def end(self) -> None:
        """End the span (once) and hand it to the span processor, unless it is not recorded."""
        if self._ended:
            return
        self._ended = True
        if self.recording:
            self._recorder.finish(self, time_ns())

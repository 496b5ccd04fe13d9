"""Counting what never reaches the collector: failed exports and spans the full queue turned away.

Imported only when tracing is on (it needs the SDK).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

from opentelemetry.context import Context
from opentelemetry.sdk.trace import ReadableSpan, Span, SpanProcessor
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter, SpanExportResult
from prometheus_client import Counter

__all__ = ["CountingExporter", "QueueWatch"]

logger = logging.getLogger("chatgate.telemetry")


class CountingExporter(SpanExporter):
    """The OTLP exporter, counting the spans of every export that did not succeed (runs on the SDK's thread)."""

    def __init__(self, exporter: SpanExporter, dropped: Counter) -> None:
        self._exporter = exporter
        self._dropped = dropped

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        """Export ``spans``; count them when the collector did not take them."""
        try:
            result = self._exporter.export(spans)
        except Exception:
            logger.warning("trace export failed", exc_info=True)
            result = SpanExportResult.FAILURE
        if result is not SpanExportResult.SUCCESS:
            self._dropped.inc(len(spans))
        return result

    def shutdown(self) -> None:
        """Shut the exporter down."""
        self._exporter.shutdown()

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        """Flush the exporter."""
        return bool(self._exporter.force_flush(timeout_millis))


class QueueWatch(SpanProcessor):
    """The batch processor, counting a span it is about to turn away because its queue is full.

    The SDK drops such a span with only a log line; the queue's length is read from its private
    state (a ``deque`` with a maximum length), so a future SDK without it just counts nothing here.
    """

    def __init__(self, processor: BatchSpanProcessor, dropped: Counter) -> None:
        self._processor = processor
        self._dropped = dropped
        self._queue = getattr(getattr(processor, "_batch_processor", None), "_queue", None)

    def on_start(self, span: Span, parent_context: Context | None = None) -> None:
        """Nothing to do when a span starts."""

    def on_end(self, span: ReadableSpan) -> None:
        """Queue the ended span, counting it when the queue is full."""
        queue = self._queue
        if queue is not None and queue.maxlen is not None and len(queue) >= queue.maxlen:
            self._dropped.inc()
        self._processor.on_end(span)

    def shutdown(self) -> None:
        """Export what is queued, then stop."""
        self._processor.shutdown()  # type: ignore[no-untyped-call]

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        """Export what is queued now."""
        return self._processor.force_flush(timeout_millis)

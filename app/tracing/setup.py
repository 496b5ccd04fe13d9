"""The app's tracer: an SDK ``TracerProvider`` of its own, a batching processor and the OTLP/HTTP exporter.

Bound at start (a reload does not change it). The exporter runs on the batch processor's thread: a
collector that is down or slow only makes exports fail, and every span an export loses, or the full
queue turns away, is counted in ``chatgate_trace_spans_dropped_total``; the stream never waits for it.
"""

from __future__ import annotations

import asyncio
import importlib.metadata
import logging
import os
from collections.abc import Mapping
from typing import TYPE_CHECKING

from prometheus_client import CollectorRegistry, Counter

from chatgate.config import TelemetrySettings

if TYPE_CHECKING:
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.trace import Tracer
    from opentelemetry.util.types import Attributes

__all__ = ["ENDPOINT_VARIABLES", "Telemetry", "start_telemetry"]

logger = logging.getLogger("chatgate.telemetry")

ENDPOINT_VARIABLES = ("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_ENDPOINT")
"""The standard variables that, set, turn tracing on without an ``otlp_endpoint``."""


class Telemetry:
    """One app's tracer, its settings and its dropped-span counter; ``shutdown()`` flushes and stops it.

    ``recorder`` records the runs' spans with what ``tracer`` (an SDK tracer) holds: its sampler, ids,
    resource, scope, limits and span processor.
    """

    def __init__(self, settings: TelemetrySettings, provider: TracerProvider, tracer: Tracer, dropped: Counter) -> None:
        self.settings = settings
        self.capture_content = settings.capture_content
        self.tracer = tracer
        self.dropped = dropped
        from chatgate.tracing.recorder import SpanRecorder  # needs the SDK: imported only when tracing is on

        self.recorder = SpanRecorder(tracer)
        self._provider = provider

    async def shutdown(self) -> None:
        """Export what is queued (bounded by the exporter's timeout) off the event loop, then stop."""
        await asyncio.to_thread(self._provider.shutdown)


def start_telemetry(
    settings: TelemetrySettings, registry: CollectorRegistry, environ: Mapping[str, str] | None = None
) -> Telemetry | None:
    """The tracer for ``settings``, or None when no endpoint is configured (tracing off)."""
    environ = os.environ if environ is None else environ
    if settings.otlp_endpoint is None and not any(environ.get(name) for name in ENDPOINT_VARIABLES):
        return None
    if environ.get("OTEL_SDK_DISABLED", "").strip().lower() == "true":
        return None
    # The SDK is imported only when tracing is on: an untraced server never loads it.
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor
    from opentelemetry.sdk.trace.sampling import ALWAYS_ON, ParentBased, TraceIdRatioBased

    from chatgate.tracing.export import CountingExporter, QueueWatch

    dropped = Counter(
        "chatgate_trace_spans_dropped",
        "Spans never delivered to the trace collector (export failed or timed out, or the queue was full)",
        registry=registry,
    )
    endpoint = settings.otlp_endpoint
    exporter = OTLPSpanExporter(
        endpoint=f"{endpoint.rstrip('/')}/v1/traces" if endpoint is not None else None,
        headers=dict(settings.headers) or None,
        timeout=settings.export_timeout_seconds,
    )
    created = Resource.create(
        {"service.name": settings.service_name, "service.version": importlib.metadata.version("chatgate")}
    )
    resource = _resource_hashed_once(Resource)(created.attributes, created.schema_url)
    ratio = settings.sample_ratio
    root = ALWAYS_ON if ratio >= 1.0 else TraceIdRatioBased(ratio)
    provider = TracerProvider(resource=resource, sampler=ParentBased(root))
    processor = BatchSpanProcessor(CountingExporter(exporter, dropped))  # OTEL_BSP_* variables apply
    provider.add_span_processor(QueueWatch(processor, dropped))
    tracer = provider.get_tracer("chatgate", importlib.metadata.version("chatgate"))
    logger.info(
        "tracing on: OTLP/HTTP to %s, sample_ratio %s, capture_content %s",
        endpoint or "the OTEL_EXPORTER_OTLP_* endpoint",
        settings.sample_ratio,
        settings.capture_content,
    )
    return Telemetry(settings, provider, tracer, dropped)


def _resource_hashed_once(base: type[Resource]) -> type[Resource]:
    """``Resource`` with its hash worked out once.

    The OTLP encoder hashes the resource of every span it encodes, and the SDK's hash serializes all its
    attributes to JSON each time (about 5 µs a span).
    """

    class HashedOnce(base):  # type: ignore[valid-type,misc]
        def __init__(self, attributes: Attributes, schema_url: str | None = None) -> None:
            super().__init__(attributes, schema_url)
            self._hash = super().__hash__()

        def __hash__(self) -> int:
            return self._hash  # type: ignore[no-any-return]

    return HashedOnce

"""The CPU of a run's spans alone, without an app: on the event loop, and the OTLP exporter's encoding.

    .venv/bin/python bench/span_cpu.py [--rounds 9] [--runs 400]

A loop of ``RunTrace`` runs as the runner drives them for a one-call answer (``invoke_agent`` and one
``chat`` span, chatgate's attributes, sampled), into the SDK's ``BatchSpanProcessor`` with an exporter
that keeps the spans: this thread's CPU time (``time.thread_time``) a run is what the event loop pays.
Then the kept spans are encoded by the official OTLP exporter's encoder, as its thread does before
each POST: CPU µs a span. The queue is flushed between rounds (not timed), so no span is turned away
by a full queue. Medians over the rounds. A benchmark, not a test.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Sequence
from dataclasses import dataclass, field

from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter, SpanExportResult
from prometheus_client import CollectorRegistry, Counter

from chatgate.caller import Caller
from chatgate.config import AgentConfig, TelemetrySettings
from chatgate.events import ModelFinished, Usage
from chatgate.providers import ModelRequest
from chatgate.tracing import RunTrace
from chatgate.tracing.setup import Telemetry


class _Keep(SpanExporter):
    def __init__(self) -> None:
        self.spans: list[ReadableSpan] = []

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        self.spans.extend(spans)
        return SpanExportResult.SUCCESS


@dataclass
class _Agent:
    name: str = "bot"
    config: AgentConfig = field(default_factory=lambda: AgentConfig(model="fake:bench"))
    prompt: None = None


def main() -> None:
    """Print µs a run on the event loop and µs a span of encoding."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=9)
    parser.add_argument("--runs", type=int, default=400)
    args = parser.parse_args()
    exporter = _Keep()
    provider = TracerProvider(shutdown_on_exit=False)
    provider.add_span_processor(BatchSpanProcessor(exporter))
    dropped = Counter("dropped_spans", "unused", registry=CollectorRegistry())
    telemetry = Telemetry(TelemetrySettings(), provider, provider.get_tracer("chatgate", "0"), dropped)
    agent, caller, headers = _Agent(), Caller(None, False), {"user-agent": "bench/1.0"}
    request = ModelRequest("gpt-bench", (), settings={"temperature": 0.2})
    finished, usage = ModelFinished("stop", "resp-1", "gpt-bench-1"), Usage(12, 200)
    per_run = []
    for _ in range(args.rounds):
        start = time.thread_time()
        for _ in range(args.runs):
            trace = RunTrace(telemetry, agent, protocol="ag-ui", caller=caller, headers=headers)
            trace.model_call(request, 0).ended(finished, usage, None)
            trace.finished("stop")
            trace.close()
        per_run.append((time.thread_time() - start) / args.runs * 1e6)
        provider.force_flush()
    per_span = []
    batch = exporter.spans[:512]
    for _ in range(args.rounds):
        start = time.thread_time()
        encode_spans(batch).SerializeToString()
        per_span.append((time.thread_time() - start) / len(batch) * 1e6)
    provider.shutdown()
    print(f"event loop: {statistics.median(per_run):.1f} µs a run (min {min(per_run):.1f}), two spans")
    print(f"encoding:   {statistics.median(per_span):.1f} µs a span (min {min(per_span):.1f})")


if __name__ == "__main__":
    main()

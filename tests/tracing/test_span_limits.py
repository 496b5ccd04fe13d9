"""The SDK's span limits still apply to spans chatgate records itself (``chatgate.tracing.recorder``).

chatgate hands the SDK's span processor ``ReadableSpan``s it builds, not the SDK's own ``Span``, which is
where the SDK applies ``OTEL_SPAN_ATTRIBUTE_VALUE_LENGTH_LIMIT`` and its kin. The spans go to an
in-memory exporter here, through the SDK's processor, as the OTLP exporter would get them.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from opentelemetry.sdk.trace import SpanLimits, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from prometheus_client import CollectorRegistry, Counter

from chatgate.caller import Caller
from chatgate.config import AgentConfig, TelemetrySettings
from chatgate.events import ModelFinished, Usage
from chatgate.providers import ModelRequest
from chatgate.tracing import RunTrace
from chatgate.tracing.setup import Telemetry


@dataclass
class _Agent:
    name: str = "bot"
    config: AgentConfig = field(default_factory=lambda: AgentConfig(model="builtin:echo"))
    prompt: None = None


def test_the_sdks_attribute_length_limit_applies_and_the_model_call_is_the_runs_child() -> None:
    exporter = InMemorySpanExporter()
    provider = TracerProvider(span_limits=SpanLimits(max_span_attribute_length=8))
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    dropped = Counter("dropped_spans", "unused", registry=CollectorRegistry())
    telemetry = Telemetry(TelemetrySettings(), provider, provider.get_tracer("test"), dropped)
    headers = {"user-agent": "a-very-long-user-agent/1.0"}
    trace = RunTrace(telemetry, _Agent(), protocol="ag-ui", caller=Caller(None, False), headers=headers)
    call = trace.model_call(ModelRequest("gpt-test", ()), 0)
    call.ended(ModelFinished("stop", "resp-1", "gpt-test-2026"), Usage(3, 5), None)
    trace.finished("stop")
    trace.close()

    chat, run = exporter.get_finished_spans()
    assert (chat.name, run.name) == ("chat gpt-test", "invoke_agent bot")
    assert run.attributes is not None and run.attributes["user_agent.original"] == "a-very-l"
    assert chat.attributes is not None and chat.attributes["gen_ai.response.model"] == "gpt-test"
    assert chat.attributes["gen_ai.usage.output_tokens"] == 5
    assert run.context is not None and chat.context is not None and chat.parent is not None
    assert chat.parent.span_id == run.context.span_id and chat.context.trace_id == run.context.trace_id
    assert format(run.context.trace_id, "032x") == trace.trace_id
    assert run.parent is None and run.context.trace_flags.sampled

"""Traces: OpenTelemetry GenAI spans of every run, exported over OTLP/HTTP (docs/observability.md).

A thin layer around the existing stages, fed by the same points the metrics see: the chat request
starts a ``RunTrace`` (``invoke_agent {agent}``, app/web/chat_request.py), the runner reports each model
call (``chat {model}``), server tool call (``execute_tool {tool}``) and approval to it. No stage imports an
exporter: only ``setup`` touches the SDK, and only when ``[telemetry]`` (or ``OTEL_EXPORTER_OTLP_*``)
configures an endpoint; otherwise ``start_telemetry`` returns None and every hook is a ``None`` check.
``run_trace.py`` (the spans of one run), ``recorder.py`` (a span as plain data, handed to the SDK's
span processor as a ``ReadableSpan`` when it ends), ``content.py`` (captured content, redacted),
``export.py`` (the exporter's queue, counted) and ``setup.py`` (the SDK, when configured).

A package of its own, beside ``telemetry/`` (meters and logs): spans describe a model request and an
agent, so tracing sits above the providers, while meters and logs sit below everything.
"""

from chatgate.tracing.feedback import trace_feedback
from chatgate.tracing.run_trace import SEMCONV_VERSION, ModelCallTrace, RunTrace, ToolTrace
from chatgate.tracing.setup import Telemetry, start_telemetry

__all__ = [
    "SEMCONV_VERSION",
    "ModelCallTrace",
    "RunTrace",
    "Telemetry",
    "ToolTrace",
    "start_telemetry",
    "trace_feedback",
]

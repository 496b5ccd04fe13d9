"""Traces: OpenTelemetry GenAI spans of every run, exported over OTLP/HTTP (docs/observability.md).

A thin layer around the existing stages, fed by the same points the metrics see: the chat request
starts a ``RunTrace`` (``invoke_agent {agent}``), the runner reports each model call (``chat {model}``),
server tool call (``execute_tool {tool}``) and approval to it. No stage imports an exporter: only
``setup`` touches the SDK, and only when ``[telemetry]`` (or ``OTEL_EXPORTER_OTLP_*``) configures an
endpoint; otherwise ``start_telemetry`` returns None and every hook is a ``None`` check.
"""

from chatgate.telemetry.chat_request import trace_chat, traced_refusals
from chatgate.telemetry.run_trace import SEMCONV_VERSION, ModelCallTrace, RunTrace, ToolTrace
from chatgate.telemetry.setup import Telemetry, start_telemetry, telemetry_of

__all__ = [
    "SEMCONV_VERSION",
    "ModelCallTrace",
    "RunTrace",
    "Telemetry",
    "ToolTrace",
    "start_telemetry",
    "telemetry_of",
    "trace_chat",
    "traced_refusals",
]

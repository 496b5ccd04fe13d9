"""Telemetry: what the app tells its operator about itself.

``metrics.py`` (the Prometheus registry and meters, ``GET /metrics``), ``mcp_metrics.py`` (MCP tool
calls), ``processes.py`` (the build info, ``process_*``, and the workers' metrics summed), ``observe.py``
(every HTTP request observed once: its ``x-request-id`` and the requests counter) and ``logs.py`` (the
request id on every log line, text or JSON lines). Tracing belongs here too when it comes; no other
stage imports an exporter.
"""

from chatgate.telemetry.logs import REQUEST_TRACE, RequestTrace, loggable, logging_config, redact_url
from chatgate.telemetry.mcp_metrics import MCPMetrics
from chatgate.telemetry.metrics import Metrics, StreamMeter, error_kind, metrics_endpoint
from chatgate.telemetry.observe import label_request, observe_request
from chatgate.telemetry.processes import shared_metrics, worker_stopped

__all__ = [
    "REQUEST_TRACE",
    "MCPMetrics",
    "Metrics",
    "RequestTrace",
    "StreamMeter",
    "error_kind",
    "label_request",
    "loggable",
    "logging_config",
    "metrics_endpoint",
    "observe_request",
    "redact_url",
    "shared_metrics",
    "worker_stopped",
]

"""Metrics of MCP tool calls, per server and tool, in the app's registry (``GET /metrics``)."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Histogram

__all__ = ["MCPMetrics"]

_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0)


class MCPMetrics:
    """``chatgate_mcp_tool_calls``, ``chatgate_mcp_tool_errors`` and ``chatgate_mcp_tool_duration_seconds``."""

    def __init__(self, registry: CollectorRegistry) -> None:
        self.calls = Counter(
            "chatgate_mcp_tool_calls", "MCP tool calls made, by server and tool", ["server", "tool"], registry=registry
        )
        self.errors = Counter(
            "chatgate_mcp_tool_errors",
            "MCP tool calls that failed, by kind: tool (isError), timeout, unavailable or protocol",
            ["server", "tool", "kind"],
            registry=registry,
        )
        self.duration = Histogram(
            "chatgate_mcp_tool_duration_seconds",
            "Seconds one MCP tool call took, success or failure",
            ["server", "tool"],
            buckets=_BUCKETS,
            registry=registry,
        )

    def called(self, server: str, tool: str, seconds: float, error_kind: str) -> None:
        """Record one call; ``error_kind`` is empty for a success."""
        self.calls.labels(server, tool).inc()
        self.duration.labels(server, tool).observe(seconds)
        if error_kind:
            self.errors.labels(server, tool, error_kind).inc()

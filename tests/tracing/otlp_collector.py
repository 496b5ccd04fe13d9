"""A trace collector on loopback that keeps what it is sent: each export's HTTP headers and decoded spans.

Where Phoenix (tests/phoenix.py) cannot tell (it shows neither the request headers nor every resource
attribute), this one can: ``POST /v1/traces`` is decoded with the OTLP protobuf classes the exporter
itself uses and answered 200, on a thread of the test process.
"""

from __future__ import annotations

import gzip
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue

__all__ = ["Collector", "ExportedSpan", "running_collector"]


@dataclass(frozen=True)
class ExportedSpan:
    """One span as it was exported: its trace, name, attributes, its resource's and the export's headers."""

    trace_id: str
    name: str
    attributes: dict[str, Any]
    resource: dict[str, Any]
    headers: dict[str, str]


def _value(value: AnyValue) -> Any:
    kind = value.WhichOneof("value")
    if kind == "array_value":
        return [_value(item) for item in value.array_value.values]
    return getattr(value, kind) if kind else None


class Collector:
    """The spans received so far (``spans``); ``url`` is the base URL to configure as ``otlp_endpoint``."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.spans: list[ExportedSpan] = []
        self.lock = threading.Lock()

    def received(self, headers: dict[str, str], body: bytes) -> None:
        """Decode one export and keep its spans."""
        request = ExportTraceServiceRequest.FromString(body)
        with self.lock:
            for resource_spans in request.resource_spans:
                resource = {item.key: _value(item.value) for item in resource_spans.resource.attributes}
                for scope_spans in resource_spans.scope_spans:
                    for span in scope_spans.spans:
                        attributes = {item.key: _value(item.value) for item in span.attributes}
                        self.spans.append(ExportedSpan(span.trace_id.hex(), span.name, attributes, resource, headers))

    def trace(self, trace_id: str, count: int, timeout: float = 30.0) -> list[ExportedSpan]:
        """The spans of ``trace_id`` once ``count`` of them arrived (fails if they never do)."""
        deadline = time.monotonic() + timeout
        while True:
            with self.lock:
                found = [span for span in self.spans if span.trace_id == trace_id]
            if len(found) >= count or time.monotonic() > deadline:
                assert len(found) >= count, f"{len(found)} spans of trace {trace_id} arrived, expected {count}"
                return found
            time.sleep(0.05)


@contextmanager
def running_collector() -> Iterator[Collector]:
    """A collector on a free loopback port, for the ``with`` block."""
    collector: Collector

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("content-length", "0")))
            if self.headers.get("content-encoding") == "gzip":
                body = gzip.decompress(body)
            collector.received({name.lower(): value for name, value in self.headers.items()}, body)
            self.send_response(200)
            self.send_header("content-type", "application/x-protobuf")
            self.send_header("content-length", "0")
            self.end_headers()

        def log_message(self, format: str, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    collector = Collector(f"http://127.0.0.1:{server.server_address[1]}")
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield collector
    finally:
        server.shutdown()
        server.server_close()

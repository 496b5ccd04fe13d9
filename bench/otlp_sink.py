"""A trace collector that takes every OTLP/HTTP export and keeps nothing: the bench's traced setup's sink.

    python bench/otlp_sink.py PORT

It answers ``POST /v1/traces`` 200 with an empty ``ExportTraceServiceResponse`` (an empty protobuf
body), in its own process, so its CPU is not chatgate's; the exporting (encoding, sending) is.
"""

from __future__ import annotations

import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class _Sink(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("content-length", "0")))
        self.send_response(200)
        self.send_header("content-type", "application/x-protobuf")
        self.send_header("content-length", "0")
        self.end_headers()

    def log_message(self, format: str, *args: object) -> None:
        pass


if __name__ == "__main__":
    ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), _Sink).serve_forever()

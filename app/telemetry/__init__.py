"""Telemetry: what the app tells its operator about itself.

``metrics.py`` (the Prometheus registry and meters, ``GET /metrics``), ``observe.py`` (every HTTP request
observed once: its ``x-request-id`` and the requests counter) and ``logs.py`` (the request id on every log
line, text or JSON lines). Tracing belongs here too when it comes; no other stage imports an exporter.
"""

__all__: list[str] = []

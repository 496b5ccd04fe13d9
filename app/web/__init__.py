"""The HTTP edge: ``create_app()``, its routes, and the one place a stream meets the socket.

``app.py`` (``create_app``: routes, middleware, the shared HTTP client, errors mapped to HTTP),
``sse.py`` (the event-stream response), ``threads.py`` and ``runs.py`` (the stored-thread routes, resume
and stop), ``openapi.py``, ``readiness.py`` and ``chat_page.py``.
"""

from chatgate.web.app import create_app

__all__ = [
    "create_app",
]

"""A second origin on loopback: a plain static file server for a built browser app.

Another port on 127.0.0.1 is another origin to the browser, so an app served from here talks to
chatgate cross-origin, through CORS, as an app on its own domain would.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

__all__ = ["static_site"]


class _QuietHandler(SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        """No access log in the test output."""


@contextmanager
def static_site(root: Path) -> Iterator[str]:
    """Serve ``root`` on a free loopback port; yields its origin (``http://127.0.0.1:PORT``)."""
    handler = functools.partial(_QuietHandler, directory=str(root))
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, name="static-site", daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)

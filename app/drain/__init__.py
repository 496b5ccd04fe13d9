"""Draining on SIGTERM: stop taking new runs, let the running ones finish, then stop.

``state.py`` (``Drain``: one process's shutdown, draining then stopping, and the 503 a new run gets
meanwhile) and ``server.py`` (``DrainingServer``: the uvicorn server that drives it from the signals).
"""

from chatgate.drain.server import ENDING_SECONDS, DrainingServer
from chatgate.drain.state import DRAIN_RETRY_AFTER, Drain, refuse_when_draining

__all__ = ["DRAIN_RETRY_AFTER", "ENDING_SECONDS", "Drain", "DrainingServer", "refuse_when_draining"]

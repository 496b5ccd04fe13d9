"""``Drain``: one process's shutdown on SIGTERM, in two steps (``DrainingServer``, app/serve/server.py, drives it).

1. **Draining** (the first SIGTERM): ``/readyz`` answers 503 so the load balancer sends no more, a
   new stream (a chat request or a resume) is refused with 503 and ``Retry-After`` so it is retried on
   another replica, and the streams already running go on to their end.
2. **Stopping** (the grace period is over, every stream has ended, or a second signal came): the
   ``stopping`` event is set, and each run still going ends at its next model event with its
   protocol's error event, its turn saved as partial (app/run/runner.py).

``draining`` is a plain attribute so a signal handler can set it: the very next request sees it.
"""

from __future__ import annotations

import asyncio
from typing import Any

from chatgate.errors import RequestError

__all__ = ["DRAIN_RETRY_AFTER", "ENDING_SECONDS", "Drain", "refuse_when_draining"]

DRAIN_RETRY_AFTER = 1
"""The ``Retry-After`` (seconds) of a stream refused while draining: another replica can answer at once."""

ENDING_SECONDS = 5
"""How long the streams still running once stopping begins get to send their protocol's end (uvicorn's
``timeout_graceful_shutdown``); a process stops within ``shutdown_grace_seconds`` + this after SIGTERM."""


class Drain:
    """Whether this process is draining, and the ``stopping`` event the runs watch."""

    def __init__(self, stopping: asyncio.Event, runs: set[Any]) -> None:
        self.draining = False
        self.stopping = stopping
        self._runs = runs  # the app's detached thread runs (app/threads/): they are work in progress too

    def begin(self) -> None:
        """Start draining (safe to call from a signal handler)."""
        self.draining = True

    def runs_going(self) -> int:
        """How many detached runs (a stored thread's run whose client left) are still going."""
        return len(self._runs)


def refuse_when_draining(drain: Drain) -> None:
    """Raise the 503 a new stream gets while this process drains; nothing when it does not."""
    if drain.draining:
        raise RequestError(
            503,
            "shutting_down",
            "this server is shutting down and starts no new stream; retry, another replica will answer",
            headers={"Retry-After": str(DRAIN_RETRY_AFTER), "Connection": "close"},
        )

"""``DrainingServer``: uvicorn's server, draining on the first SIGTERM before it shuts down.

uvicorn alone stops accepting at once on SIGTERM and gives open requests ``timeout_graceful_shutdown``
seconds before cancelling them. Here the first SIGTERM only starts the drain (``Drain``): the server
keeps accepting, so a request that still reaches this replica gets a 503 it can retry elsewhere
instead of a refused connection, and the loop checks every tick (0.1 s) whether any request or
detached run is still going. Once none is, or ``grace`` seconds have passed, uvicorn's shutdown
runs: ``stopping`` is set first, so what still runs ends with its protocol's error event (its turn
saved as partial), and uvicorn waits up to ``ENDING_SECONDS`` for those ends to go out.

A second SIGTERM, or a SIGINT at any time (Ctrl-C), skips the rest of the drain; a SIGINT during that
shutdown makes uvicorn quit without waiting. With ``grace`` 0 SIGTERM shuts down at once too.
"""

from __future__ import annotations

import logging
import signal
import socket
import time
from types import FrameType

import uvicorn

from chatgate.drain import Drain

__all__ = ["DrainingServer"]

logger = logging.getLogger("chatgate.drain")


class DrainingServer(uvicorn.Server):
    """Drains for up to ``grace`` seconds on the first SIGTERM, then shuts down with ``drain.stopping`` set."""

    def __init__(self, config: uvicorn.Config, drain: Drain, grace: float) -> None:
        super().__init__(config)
        self._drain = drain
        self._grace = grace
        self._drain_began: float | None = None
        self._reported = -float("inf")  # when the drain last logged how it goes

    def handle_exit(self, sig: int, frame: FrameType | None) -> None:
        """The first SIGTERM starts the drain; any other signal shuts down as uvicorn does."""
        if sig == signal.SIGTERM and self._grace > 0 and not self._drain.draining and not self.should_exit:
            self._captured_signals.append(sig)  # re-raised once served, as uvicorn does
            self._drain.begin()
            self._drain_began = time.monotonic()
            return
        super().handle_exit(sig, frame)

    async def on_tick(self, counter: int) -> bool:
        """While draining, end the drain once nothing runs or the grace period is over."""
        began = self._drain_began
        if began is not None and not self.should_exit:
            if time.monotonic() - self._reported >= 5:  # a line at once, then every 5 s: not per tick
                self._reported = time.monotonic()
                logger.info(
                    "draining (readiness 503, new streams refused): %d request(s) and %d detached run(s)"
                    " still going, %.1f s of %g s grace left",
                    len(self.server_state.tasks),
                    self._drain.runs_going(),
                    max(0.0, began + self._grace - time.monotonic()),
                    self._grace,
                )
            if self._idle():
                logger.info("drained in %.2f s: nothing runs any more", time.monotonic() - began)
                self.should_exit = True
            elif time.monotonic() - began >= self._grace:
                running = len(self.server_state.tasks)
                logger.warning("grace of %g s over: ending the %d request(s) still running", self._grace, running)
                self.should_exit = True
        return await super().on_tick(counter)

    def _idle(self) -> bool:
        return not self.server_state.tasks and self._drain.runs_going() == 0

    async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
        """Tell the runs still going to end in their protocol, then shut down as uvicorn does."""
        self._drain.draining = True
        self._drain.stopping.set()
        await super().shutdown(sockets=sockets)

"""Config reloading: on SIGHUP or when the config file changes, the next request uses the new config.

The new config is loaded and checked first; a config with problems is logged and the running one kept.
Agents are swapped in one assignment, so a request sees either the old agents or the new ones, never a
mix, and requests already streaming finish on the agents they started with. Conversations are held by
clients (or keyed by thread), so a changed system prompt reaches each one on its next turn as a swap,
with its history intact.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
from collections.abc import Callable
from pathlib import Path

from chatgate.config import Config, load_config
from chatgate.errors import ConfigError

__all__ = ["ConfigWatcher"]

logger = logging.getLogger("chatgate.reload")


class ConfigWatcher:
    """Watches ``path`` (polling its modification time) and SIGHUP; calls ``apply`` with each new config."""

    def __init__(self, path: Path, apply: Callable[[Config], None], *, interval: float = 2.0) -> None:
        self.path = path
        self._apply = apply
        self._interval = interval
        self._stamp = self._read_stamp()
        self._wake = asyncio.Event()

    def _read_stamp(self) -> tuple[int, int] | None:
        try:
            stat = self.path.stat()
        except OSError:
            return None
        return (stat.st_mtime_ns, stat.st_size)

    def reload(self) -> bool:
        """Load and apply the file now; False (and a log line) when it has problems."""
        self._stamp = self._read_stamp()
        try:
            config = load_config(self.path)
        except ConfigError as exc:
            logger.error("config %s not reloaded, keeping the running one: %s", self.path, exc)
            return False
        self._apply(config)
        logger.info("config %s reloaded: %d agent(s)", self.path, len(config.agents))
        return True

    async def run(self) -> None:
        """Reload on SIGHUP or a changed file until cancelled."""
        loop = asyncio.get_running_loop()
        try:
            loop.add_signal_handler(signal.SIGHUP, self._wake.set)
        except (NotImplementedError, RuntimeError, ValueError):  # not the main thread, or no signals here
            logger.debug("SIGHUP reloading unavailable; watching %s for changes only", self.path)
        try:
            while True:
                try:
                    await asyncio.wait_for(self._wake.wait(), self._interval)
                except TimeoutError:
                    if self._read_stamp() == self._stamp:
                        continue
                self._wake.clear()
                self.reload()
        finally:
            with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
                loop.remove_signal_handler(signal.SIGHUP)

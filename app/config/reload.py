"""Config reloading: on SIGHUP or when a file the config reads changes, the next request uses the new config.

Watched: the config file, every ``${file:}`` it references, and the files its prompt templates read
(variable ``files``, ``code``, ``runtime_code`` and condition ``code``). Template files are also re-read
per request when they change, so for them a reload is only a formality; a ``${file:}`` is read once, at
load, and only a reload brings its new text in. Tool modules are imported once per process: a changed
tool module takes effect on restart.

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

from chatgate.config.loading import load_config
from chatgate.config.schema import Config, SystemPromptConfig
from chatgate.errors import ConfigError

__all__ = ["ConfigWatcher", "watched_files"]

logger = logging.getLogger("chatgate.reload")


Stamp = tuple[int, int] | None


def watched_files(config: Config) -> tuple[Path, ...]:
    """Every file ``config`` was read from or reads when rendering prompts."""
    files = list(config.files_read)
    for agent in config.agents.values():
        prompt = agent.system_prompt
        if not isinstance(prompt, SystemPromptConfig):
            continue
        paths: list[str | None] = [prompt.runtime_code]
        for variable in prompt.variables.values():
            if isinstance(variable, str):
                continue
            paths += [*(variable.files or ()), variable.code, variable.runtime_code]
            paths.append(variable.condition.code if variable.condition is not None else None)
        files += [config.base_dir / path for path in paths if path]
    return tuple(dict.fromkeys(files))


def _stamp(path: Path) -> Stamp:
    try:
        stat = path.stat()
    except OSError:
        return None
    return (stat.st_mtime_ns, stat.st_size)


class ConfigWatcher:
    """Watches the files of a config (polling their modification times) and SIGHUP.

    Calls ``apply`` with each new config. ``config`` is the running config loaded from ``path``, whose
    files are watched from the start; without it only ``path`` is, until the first reload.
    """

    def __init__(
        self, path: Path, apply: Callable[[Config], None], *, interval: float = 2.0, config: Config | None = None
    ) -> None:
        self.path = path
        self._apply = apply
        self._interval = interval
        self._stamps = self._read_stamps(watched_files(config) if config is not None else ())
        self._wake = asyncio.Event()

    @property
    def files(self) -> tuple[Path, ...]:
        """The files being watched."""
        return tuple(self._stamps)

    def _read_stamps(self, files: tuple[Path, ...]) -> dict[Path, Stamp]:
        return {file: _stamp(file) for file in dict.fromkeys((self.path, *files))}

    def _changed(self) -> bool:
        return any(_stamp(file) != stamp for file, stamp in self._stamps.items())

    def reload(self) -> bool:
        """Load and apply the file now; False (and a log line) when it has problems."""
        self._stamps = self._read_stamps(tuple(self._stamps))
        try:
            config = load_config(self.path)
        except ConfigError as exc:
            logger.error("config %s not reloaded, keeping the running one: %s", self.path, exc)
            return False
        self._stamps = self._read_stamps(watched_files(config))
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
                    if not self._changed():
                        continue
                self._wake.clear()
                self.reload()
        finally:
            with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
                loop.remove_signal_handler(signal.SIGHUP)

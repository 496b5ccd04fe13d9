"""``chatgate serve --workers N``: N server processes sharing one listening socket.

The parent binds the socket, forks the workers and waits. Each worker builds its own app from the
already validated config and runs it under ``DrainingServer`` (app/serve/server.py), so SIGTERM drains each
worker: its running streams finish within the grace period, the rest end in their protocol. The
parent passes SIGTERM and SIGINT on to every worker (and SIGHUP, which makes each reload its
config), restarts a worker that dies on its own, and returns once all have stopped. If the parent
itself dies, however it dies (SIGKILL included), every worker gets SIGTERM, drains and exits
(app/serve/lifeline.py): no worker outlives it holding the port.
Their metrics are summed: every worker writes its values to files in a directory the parent makes
and removes (app/telemetry/processes.py), and any of them answers ``GET /metrics`` for all. Otherwise
workers share nothing but the socket: limits and approvals that must hold across them need
``[server] redis_url``.
"""

from __future__ import annotations

import contextlib
import multiprocessing
import os
import signal
import socket
import threading
from collections.abc import Callable
from multiprocessing.process import BaseProcess
from pathlib import Path
from types import FrameType
from typing import Any

import uvicorn

from chatgate.config import Config, load_config
from chatgate.drain import Drain
from chatgate.errors import ConfigError
from chatgate.serve.lifeline import die_with_parent
from chatgate.telemetry import shared_metrics, worker_stopped

__all__ = ["serve_workers"]

ServerFactory = Callable[[uvicorn.Config, Drain], uvicorn.Server]
"""Builds a worker's server from its settings and its app's ``Drain`` (``chatgate.serve.cli.draining_server``)."""


def serve_workers(
    workers: int,
    config: Config,
    config_path: Path | None,
    settings: dict[str, Any],
    server_factory: ServerFactory,
) -> int:
    """Serve with ``workers`` processes until SIGTERM or SIGINT; returns the exit status."""
    # The app named here is never loaded: each worker builds its own.
    listening = uvicorn.Config(app="chatgate.web.app:create_app", **settings).bind_socket()
    context = multiprocessing.get_context("fork")  # the workers inherit the socket and the loaded config
    stop = threading.Event()
    processes: list[BaseProcess] = []
    arguments = (os.getpid(), config, config_path, settings, server_factory, listening)

    def start() -> BaseProcess:  # always from this (the main) thread: the workers' lifeline is tied to it
        process = context.Process(target=_run_worker, args=arguments, daemon=False)
        process.start()
        return process

    def forward(signum: int, frame: FrameType | None) -> None:
        if signum != signal.SIGHUP:  # SIGHUP: each worker reloads its config and carries on
            stop.set()
        for process in processes:
            if process.pid is not None and process.exitcode is None:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(process.pid, signum)

    with shared_metrics() as metrics_dir:  # one /metrics for all workers (app/telemetry/processes.py)
        processes.extend(start() for _ in range(workers))
        previous = {sig: signal.signal(sig, forward) for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)}
        try:
            while not stop.is_set():
                for index, process in enumerate(processes):
                    if process.exitcode is not None and not stop.is_set():
                        if process.pid is not None:
                            worker_stopped(process.pid, metrics_dir)
                        processes[index] = start()  # a worker died on its own: replace it
                stop.wait(0.5)
            for process in processes:
                process.join()
        finally:
            for sig, handler in previous.items():
                signal.signal(sig, handler)
            listening.close()
    return 0


def _run_worker(
    parent: int,
    config: Config,
    config_path: Path | None,
    settings: dict[str, Any],
    server_factory: ServerFactory,
    listening: socket.socket,
) -> None:
    """One worker of supervisor ``parent``: its own app and event loop, serving on the inherited socket."""
    from chatgate.serve.process import prepare_for_serving
    from chatgate.web import create_app

    # Its own process group: a terminal's Ctrl-C reaches the parent only, which passes it on once (a second
    # SIGINT would make uvicorn skip the graceful shutdown).
    os.setpgid(0, 0)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)  # uvicorn installs its own handlers once it runs
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    signal.signal(signal.SIGHUP, signal.SIG_IGN)  # until the app's config watcher takes it
    die_with_parent(parent)
    if config_path is not None:  # a replacement worker starts from the file as it is now
        with contextlib.suppress(ConfigError):
            config = load_config(config_path)
    app = create_app(config, config_path=config_path)
    server = server_factory(uvicorn.Config(app, **settings), app.services.drain)
    prepare_for_serving()
    server.run(sockets=[listening])

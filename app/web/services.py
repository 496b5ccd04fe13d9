"""``Services``: everything one app holds for its life, typed, in ``app.state.services`` alone.

``create_app`` builds what needs no I/O (the meters, the tracer, the drain, the readiness checks, the
access layer's caches); the lifespan opens the rest (``Running``: the agents, Redis, the store, MCP
servers, the run log, usage) and drops it when it ends. Lower layers read their own typed slice of it:
the access layer an ``AccessServices``, a stored thread's turn its ``ThreadServices``, the drain its
``Drain``; none of them imports this module.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from redis.asyncio import Redis
from starlette.applications import Starlette
from starlette.requests import Request

from chatgate.access import AccessState
from chatgate.approvals import AppApprovals
from chatgate.config import Config, ConfigWatcher
from chatgate.drain import Drain
from chatgate.files import FileStore
from chatgate.mcp import MCPServers
from chatgate.run import AgentRegistry, ModelHealth
from chatgate.runlog import RunLog
from chatgate.store import ThreadStore
from chatgate.telemetry import Metrics
from chatgate.threads import RunRecovery, ThreadRun, ThreadServices
from chatgate.tracing import Telemetry
from chatgate.usage import UsageAccounts

__all__ = ["ReadinessCheck", "Running", "Services", "running_of", "services_of"]


@dataclass(frozen=True, slots=True)
class ReadinessCheck:
    """One dependency: its name in the answer, and a coroutine function that raises when it is down."""

    name: str
    check: Callable[[], Awaitable[Any]]


@dataclass(slots=True)
class Running:
    """What the lifespan opened, held while the app runs (from its start to its stop)."""

    agents: AgentRegistry
    """The agents of the config in force; a reload replaces it in one assignment."""
    redis: Redis | None
    approvals: AppApprovals
    mcp: MCPServers
    store: ThreadStore | None
    files: FileStore | None
    run_log: RunLog
    usage: UsageAccounts
    recovery: RunRecovery | None
    threads: ThreadServices | None
    """What a stored thread's turn reads (None without a store)."""
    config_watcher: ConfigWatcher | None = None
    health: ModelHealth | None = None
    """The fallback chains' breaker (app/run/health.py), kept across reloads."""


@dataclass(slots=True)
class Services:
    """The app's services: built by ``create_app``, with ``running`` set while its lifespan runs.

    It is also the access layer's ``AccessServices``: ``config`` and ``redis`` are None before the start.
    """

    metrics: Metrics
    telemetry: Telemetry | None
    """The tracer, None when tracing is off (bound at creation: a reload does not change it)."""
    stopping: asyncio.Event
    """Set once the drain is over (app/drain.py): the streams still running then end in protocol."""
    drain: Drain
    thread_runs: set[ThreadRun]
    """The detached runs of stored threads going on in this process."""
    readiness: list[ReadinessCheck] = field(default_factory=list)
    """The named dependency checks of ``/readyz`` (app/web/readiness.py)."""
    access: AccessState = field(default_factory=AccessState)
    running: Running | None = None

    @classmethod
    def create(cls, metrics: Metrics, telemetry: Telemetry | None) -> Services:
        """The services of a new app, not started yet."""
        stopping = asyncio.Event()
        thread_runs: set[ThreadRun] = set()
        return cls(metrics, telemetry, stopping, Drain(stopping, thread_runs), thread_runs)

    @property
    def started(self) -> bool:
        """True while the lifespan runs: until then a request gets 503 ``not_started``."""
        return self.running is not None

    @property
    def config(self) -> Config | None:
        """The config in force (it follows reloads); None until the app has started."""
        return self.running.agents.config if self.running is not None else None

    @property
    def redis(self) -> Redis | None:
        """The app's Redis pool, when ``redis_url`` is set and the app has started."""
        return self.running.redis if self.running is not None else None


def services_of(app: Starlette) -> Services:
    """The services of a chatgate app (``create_app`` put them in ``app.state``)."""
    services: Services = app.state.services
    return services


def running_of(request: Request) -> Running:
    """What the lifespan opened, for a request's handler (the app refuses every request before the start)."""
    running = services_of(request.app).running
    if running is None:  # ``ChatgateApp`` answers 503 not_started before any route runs
        raise RuntimeError("chatgate has not started")
    return running

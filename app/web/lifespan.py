"""The app's lifespan: open what it serves with at the start, run its background tasks, close all at the stop.

What is bound at the start stays until a restart: Redis, the store, MCP servers, the run log (a reload
that changes them takes effect on restart). The agents follow reloads (``ConfigWatcher``): a reload
replaces ``Running.agents`` in one assignment, so a request sees the old agents or the new ones, never a mix.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from functools import partial
from pathlib import Path

import httpx
from starlette.applications import Starlette

from chatgate.access import signing_keys_ready
from chatgate.approvals import app_approvals
from chatgate.caller import Caller
from chatgate.config import Budget, Config, ConfigWatcher
from chatgate.files import FileStore
from chatgate.mcp import MCPServers
from chatgate.protocol import UIProtocol
from chatgate.providers import upstream_client
from chatgate.run import AgentRegistry, model_health
from chatgate.runlog import app_run_log
from chatgate.store import open_store
from chatgate.threads import RunRecovery, ThreadServices, checkpoint_runs, close_thread_runs, sweep_dead_runs
from chatgate.usage import PersonBudget, Pricing, UsageAccounts
from chatgate.web.readiness import add_check
from chatgate.web.redis_pool import connect_redis
from chatgate.web.services import Running, Services, services_of

__all__ = ["chatgate_lifespan"]

logger = logging.getLogger("chatgate.server")


@asynccontextmanager
async def chatgate_lifespan(
    app: Starlette,
    *,
    config: Config,
    protocols: Sequence[UIProtocol],
    config_path: Path | None,
    person_budget: PersonBudget | None,
) -> AsyncIterator[None]:
    """Open the app's ``Running`` services, serve while the body runs, then close them."""
    services = services_of(app)
    if services.started:
        raise RuntimeError("chatgate's lifespan is already running: enter it once (docs/embedding.md)")
    async with upstream_client() as http_client:
        running = await _open(app, services, config, protocols, http_client, person_budget)
        logger.info(
            "config %s: agents %s (default: %s)",
            config_path or "(built-in default)",
            ", ".join(config.agents) or "none",
            config.default_agent or "none",
        )

        def apply(new_config: Config) -> None:
            running.agents = AgentRegistry(new_config, http_client, running.approvals, running.mcp, running.health)

        if config_path is not None:
            running.config_watcher = ConfigWatcher(config_path, apply, config=config)
        background = _background(services, running)
        services.running = running
        try:
            yield
        finally:
            services.running = None
            await _close(services, running, background)


async def _open(
    app: Starlette,
    services: Services,
    config: Config,
    protocols: Sequence[UIProtocol],
    http_client: httpx.AsyncClient,
    person_budget: PersonBudget | None,
) -> Running:
    redis = connect_redis(config.server.redis_url) if config.server.redis_url else None
    if redis is not None:
        add_check(app, "redis", redis.ping)
    # The approval ledger and fallback secret belong to the app, so they outlive reloads.
    approvals = app_approvals(redis)
    # MCP servers: one session (or child process) each, per process.
    mcp = MCPServers(config, services.metrics.mcp)
    mcp.start()
    for name, connection in mcp.connections.items():
        add_check(app, f"mcp:{name}", connection.ping)
    # The fallback breaker, also kept across reloads.
    health = model_health(config.server, redis, services.metrics.count_breaker_trip)
    agents = AgentRegistry(config, http_client, approvals, mcp, health)
    store = (
        await open_store(config.store_url, config.base_dir, lock_timeout=config.store.lock_timeout_seconds)
        if config.store_url
        else None
    )
    if store is not None:
        add_check(app, "store", store.ping)
    if config.auth.jwt is not None:  # the verifier follows reloads; the check is bound at start
        add_check(app, "identity", partial(signing_keys_ready, services))
    run_log = app_run_log(config.server, redis)
    # Usage rows go to the store (else memory), budget counters to Redis (else this process).
    usage = UsageAccounts.open(
        store.engine if store is not None else None,
        redis,
        Pricing(config.pricing),
        services.metrics,
        fail_open=config.server.redis_failure == "open",
        person_budget=person_budget or partial(_jwt_person_budget, services),
    )
    recovery = RunRecovery(store, run_log, [p.name for p in protocols]) if store is not None else None
    threads = (
        ThreadServices(store, run_log, services.stopping, services.thread_runs, services.metrics, recovery)
        if store is not None
        else None
    )
    files = FileStore(store.engine) if store is not None else None
    return Running(agents, redis, approvals, mcp, store, files, run_log, usage, recovery, threads, health=health)


def _background(services: Services, running: Running) -> list[asyncio.Task[None]]:
    """Start the config watcher, the run checkpoints and the sweep of dead runs (each when it applies)."""
    tasks = []
    if running.config_watcher is not None:
        tasks.append(asyncio.create_task(running.config_watcher.run()))
    if running.store is not None:
        tasks.append(asyncio.create_task(checkpoint_runs(running.store, services.thread_runs)))
        if running.redis is not None and running.recovery is not None:  # only a Redis run log keeps journals
            tasks.append(asyncio.create_task(sweep_dead_runs(running.store, running.recovery)))
    return tasks


async def _close(services: Services, running: Running, background: list[asyncio.Task[None]]) -> None:
    for task in background:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
    await close_thread_runs(services.thread_runs)
    await running.run_log.aclose()
    if running.store is not None:
        await running.store.close()
    await running.agents.aclose()
    await running.mcp.aclose()
    if running.redis is not None:
        await running.redis.aclose()
    if services.telemetry is not None:
        await services.telemetry.shutdown()


def _jwt_person_budget(services: Services, caller: Caller) -> Budget | None:
    """``[auth.jwt.budget]`` for a signed-in person, read from the config in force (it follows reloads)."""
    config = services.config
    jwt = config.auth.jwt if config is not None else None
    return jwt.budget if caller.person is not None and jwt is not None else None

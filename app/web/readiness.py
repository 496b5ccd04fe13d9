"""``GET /readyz``: whether this replica can serve, asking every configured dependency.

The app's ``Services.readiness`` is a list of named checks; its lifespan adds one per dependency it is
configured with (app/web/lifespan.py): ``store`` (SQLite or PostgreSQL), ``redis``, ``mcp:<name>`` per MCP
server, and ``identity`` (the sign-in provider's signing keys: fetched once, or fetchable now).
A check passes when its coroutine returns; it fails when it raises or does not answer within
``CHECK_TIMEOUT`` seconds. The checks run concurrently. The answer names what is down, never why:
the detail (which may hold a host name) goes to the log.

A process that drains (SIGTERM, app/drain.py) answers 503 ``{"status": "draining"}`` at once, without
asking anything: the load balancer should send it nothing more.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from chatgate.web.services import ReadinessCheck, services_of

__all__ = ["CHECK_TIMEOUT", "ReadinessCheck", "add_check", "readyz"]

logger = logging.getLogger("chatgate.readiness")

CHECK_TIMEOUT = 2.0


def add_check(app: Starlette, name: str, check: Callable[[], Awaitable[Any]]) -> None:
    """Make ``/readyz`` also ask ``check`` (e.g. a ping) under ``name``."""
    services_of(app).readiness.append(ReadinessCheck(name, check))


async def _passes(check: ReadinessCheck) -> bool:
    try:
        async with asyncio.timeout(CHECK_TIMEOUT):
            await check.check()
    except Exception as exc:
        logger.warning("readiness: %s is down: %s: %s", check.name, type(exc).__name__, exc)
        return False
    return True


async def readyz(request: Request) -> Response:
    """200 ``{"status": "ready"}``, or 503 ``{"status": "not ready", "down": [names]}`` (or ``"draining"``)."""
    services = services_of(request.app)
    if services.drain.draining:
        return JSONResponse({"status": "draining", "down": []}, status_code=503)
    if not services.started:
        return JSONResponse({"status": "not ready", "down": ["config"]}, status_code=503)
    checks = list(services.readiness)
    results = await asyncio.gather(*(_passes(check) for check in checks))
    down = [check.name for check, passed in zip(checks, results, strict=True) if not passed]
    if down:
        return JSONResponse({"status": "not ready", "down": down}, status_code=503)
    return JSONResponse({"status": "ready", "checked": [check.name for check in checks]})

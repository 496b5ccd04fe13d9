"""The access layer's request path: who is calling, and whether it may go on.

``AccessMiddleware`` runs before routing on every HTTP request except the open probes (``/healthz``,
``/readyz``): it authenticates the key (app/access/keys.py) or the sign-in token (app/identity/),
puts the ``Caller`` in the scope for ``caller_of``, and counts the request against the key's (or the
person's) ``rpm``. It never wraps ``send``, so a stream's
frames pass it untouched. The chat endpoint then calls ``check_agent`` and, once the request is
known to be valid and before anything runs for it, ``hold_stream_slot`` for the key's
``max_concurrent_streams``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, Protocol

from redis.asyncio import Redis
from starlette.datastructures import Headers
from starlette.requests import Request
from starlette.types import ASGIApp, Receive, Scope, Send

from chatgate.access.keys import KeyRing
from chatgate.access.limits import AdmissionCheck, Limits, MemoryLimits, StreamSlot
from chatgate.access.mounting import route_path
from chatgate.access.redis_limits import RedisLimits
from chatgate.background import in_background
from chatgate.caller import CALLER_SCOPE_KEY, Caller, caller_of
from chatgate.config import Config
from chatgate.drain import Drain, refuse_when_draining
from chatgate.errors import RequestError, error_response
from chatgate.identity import TokenVerifier
from chatgate.telemetry import Metrics

if TYPE_CHECKING:
    from chatgate.run import Agent, AgentRegistry

__all__ = [
    "OPEN_PATHS",
    "AccessMiddleware",
    "AccessServices",
    "AccessState",
    "check_agent",
    "hold_stream_slot",
    "not_started",
    "resolve_agent",
    "signing_keys_ready",
]

OPEN_PATHS = frozenset({"/healthz", "/readyz"})
"""Probes a load balancer calls without a key. The app adds the chat page's files (the page asks for a key)."""


class AccessState:
    """Per app: the key ring of the current config, the token verifier and the in-process counters.

    The counters are kept across reloads, and so is the verifier (its keys and verified tokens) while
    ``[auth.jwt]`` stays the same.
    """

    def __init__(self) -> None:
        self._ring: KeyRing | None = None
        self._tokens: TokenVerifier | None = None
        self._memory = MemoryLimits()
        self._redis: RedisLimits | None = None

    def ring(self, config: Config) -> KeyRing:
        """The key ring of ``config``."""
        if self._ring is None or self._ring.config is not config:
            self._ring = KeyRing(config)  # rebuilt once per reload, not per request
        return self._ring

    def tokens(self, config: Config) -> TokenVerifier:
        """The sign-in token verifier of ``config``'s ``[auth.jwt]``."""
        settings = config.auth.jwt
        assert settings is not None  # the ring hands on tokens only with [auth.jwt]
        if self._tokens is None or self._tokens.settings != settings:
            self._tokens = TokenVerifier(settings)
        return self._tokens

    def limits_of(self, config: Config, caller: Caller) -> tuple[str, int | None, int | None] | None:
        """Whose counts ``caller`` uses, with its ``rpm`` and ``max_concurrent_streams`` (None: no limits)."""
        if caller.person is not None:
            settings = config.auth.jwt
            if settings is None:
                return None
            return caller.owner, settings.rpm, settings.max_concurrent_streams
        key = self.ring(config).key(caller.key_id)
        return None if key is None else (key.id, key.rpm, key.max_concurrent_streams)

    def limits(self, services: AccessServices, config: Config) -> Limits:
        """The counters: in Redis when the app has a pool, else in this process."""
        client = services.redis
        if client is None:
            return self._memory
        if self._redis is None:
            self._redis = RedisLimits(client, config.server.redis_failure)
        return self._redis


class AccessServices(Protocol):
    """What the access layer reads of the app's services (the app's ``Services``, app/web/services.py)."""

    @property
    def access(self) -> AccessState:
        """The app's key ring, token verifier and counters."""

    @property
    def config(self) -> Config | None:
        """The config in force (it follows reloads); None until the app has started."""

    @property
    def redis(self) -> Redis | None:
        """The app's Redis pool, when ``redis_url`` is set and the app has started."""

    @property
    def metrics(self) -> Metrics:
        """The app's meters (a refusal for a rate limit is counted)."""

    @property
    def drain(self) -> Drain:
        """The shutdown of this process: while it drains no stream starts."""


def not_started() -> RequestError:
    """The 503 a request gets before the app has started (mounted, and its lifespan never entered)."""
    message = (
        "chatgate has not started: it is mounted in an app that does not run its lifespan; enter"
        " chatgate_app.lifespan() in that app's lifespan (docs/embedding.md)"
    )
    return RequestError(503, "not_started", message)


def _config_in_force(services: AccessServices) -> Config:
    config = services.config
    if config is None:
        raise not_started()
    return config


async def signing_keys_ready(services: AccessServices) -> None:
    """Raise unless sign-in tokens can be checked: with ``[auth.jwt]``, its keys are known or fetchable (readyz)."""
    config = _config_in_force(services)
    if config.auth.jwt is not None:
        await services.access.tokens(config).keys.ready()


class AccessMiddleware:
    """Authenticate each request and count it against its key's ``rpm``; refusals are JSON errors."""

    def __init__(self, app: ASGIApp, services: AccessServices, open_paths: frozenset[str] = frozenset()) -> None:
        self.app = app
        self.services = services
        self.open_paths = OPEN_PATHS | open_paths

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Set the caller, or answer with the refusal."""
        if scope["type"] != "http" or route_path(scope) in self.open_paths:
            await self.app(scope, receive, send)
            return
        services = self.services
        access = services.access
        try:
            config = _config_in_force(services)
            caller = access.ring(config).authenticate(Headers(scope=scope))
            if isinstance(caller, str):
                caller = await access.tokens(config).caller(caller)
            limits = access.limits_of(config, caller)
            if limits is not None and limits[1] is not None:
                try:
                    await access.limits(services, config).admit(limits[0], limits[1])
                except RequestError as refused:
                    _count_refusal(services, caller, refused, "rpm")
                    raise
        except RequestError as error:
            await error_response(error)(scope, receive, send)
            return
        scope[CALLER_SCOPE_KEY] = caller
        await self.app(scope, receive, send)


def _count_refusal(services: AccessServices, caller: Caller, refused: RequestError, limit: str) -> None:
    """Count a 429 in the metrics (``chatgate_rate_limited_requests_total``); a 503 is not a rate limit."""
    if refused.status == 429:
        services.metrics.count_rate_limited(caller, limit)


def check_agent(caller: Caller, agent: str) -> None:
    """403 unless ``caller``'s key may use ``agent``."""
    if not caller.may_use(agent):
        who = "this sign-in token" if caller.person is not None else "this API key"
        raise RequestError(403, "agent_not_allowed", f"{who} may not use agent {agent!r}")


def resolve_agent(registry: AgentRegistry, name: str | None, caller: Caller) -> Agent:
    """The agent a route names (``None``: the default agent), if it exists and ``caller`` may use it."""
    if name is None:
        agent = registry.default
        if agent is None:
            raise RequestError(
                404, "no_default_agent", "no default agent is configured: set default = true on one agent"
            )
    else:
        agent = registry.get(name)
        if agent is None:
            raise RequestError(404, "unknown_agent", f"no agent named {name!r}; GET /agents lists them")
    check_agent(caller, agent.name)
    return agent


async def hold_stream_slot(
    request: Request,
    start: Callable[[], Awaitable[ASGIApp]],
    *,
    services: AccessServices,
    follows: asyncio.Future[Any] | None = None,
    check: AdmissionCheck | None = None,
) -> ASGIApp:
    """The response ``start`` makes, holding one of the caller's stream slots until it ends.

    While the process drains (SIGTERM, app/drain.py) no stream starts: 503 with ``Retry-After``.

    The slot is taken before ``start`` runs, so a stream refused for ``max_concurrent_streams`` (429)
    commits nothing and calls no model; if ``start`` refuses instead, the slot is given back. Once
    held, it is released when the response ends, whether it finished, failed or the client went away;
    a response that follows a detached run (its ``run`` task: a stored thread's run goes on after a
    hang-up) keeps the slot until that run ends too, so hanging up never frees a slot while the model
    is still being called. A stream that ``follows`` such a run (a resume) once the run outlived its
    own stream, holding one of the same key's slots in this process, rides on that slot: following its
    own run after a hang-up costs a key no second slot.

    ``check`` (a run's budgets, reserving its first model call) is made before the slot is taken, and its
    refusal wins; with both in Redis, it runs in the script that takes the slot, in the same round trip.
    Whatever refuses the request after it passed (no slot, ``start``) gives its reservation back.
    """
    refuse_when_draining(services.drain)  # a process shutting down starts no stream (app/drain.py)
    access = services.access
    config = _config_in_force(services)
    limits = access.limits_of(config, caller_of(request))
    most = limits[2] if limits is not None else None
    held_by = limits[0] if limits is not None else ""
    if limits is None or most is None or (follows is not None and _runs_holding.get(follows) == held_by):
        if check is not None:
            await check.precheck()
        return await _started(start, check)
    try:
        slot = await access.limits(services, config).open_stream(held_by, most, check)
    except RequestError as refused:
        if refused.code == "too_many_streams":  # not the check's refusal (a spent budget is no rate limit)
            _count_refusal(services, caller_of(request), refused, "max_concurrent_streams")
        raise
    try:
        response = await _started(start, check)
    except BaseException:
        await _release(slot)
        raise
    return _Holding(response, slot, held_by)


async def _started(start: Callable[[], Awaitable[ASGIApp]], check: AdmissionCheck | None) -> ASGIApp:
    """``start()``; if it refuses, nothing runs for the request: what ``check`` reserved goes back."""
    try:
        return await start()
    except BaseException:
        if check is not None:
            check.abandoned()
        raise


async def _release(slot: StreamSlot) -> None:
    """Give ``slot`` back, even from a cancelled task; a Redis slot that cannot be reached expires."""
    releasing = asyncio.get_running_loop().create_task(slot.release())
    try:
        async with asyncio.timeout(_RELEASE_SECONDS):
            await asyncio.shield(releasing)  # cancelled here, the release still runs to its end
    except TimeoutError:
        releasing.cancel()


_RELEASE_SECONDS = 5.0


class _Holding:
    """An ASGI response that holds a stream slot while it runs, and while the run it follows goes on."""

    def __init__(self, response: ASGIApp, slot: StreamSlot, key_id: str) -> None:
        self._response = response
        self._slot = slot
        run = getattr(response, "run", None)
        self._run: asyncio.Future[Any] | None = run if isinstance(run, asyncio.Future) else None
        self._key_id = key_id

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if not self._slot.expires:  # an in-process slot: released without awaiting anything
            try:
                await self._response(scope, receive, send)
            finally:
                if not self._release_after_run(None):
                    await self._slot.release()
            return
        # A plain task, not an anyio task group: holding a slot costs about 20 µs instead of 75
        # (docs/performance.md). ``keep`` logs its own failures and never ends by itself.
        keeper = asyncio.get_running_loop().create_task(self._slot.keep())
        try:
            await self._response(scope, receive, send)
        finally:
            if not self._release_after_run(keeper):
                keeper.cancel()
                await _release(self._slot)

    def _release_after_run(self, keeper: asyncio.Task[None] | None) -> bool:
        """If the run still goes on, leave the slot (and its keeper) to a task that waits for it; else False."""
        run = self._run
        if run is None or run.done():
            return False
        _runs_holding[run] = self._key_id
        in_background(_release_when_done(run, self._slot, keeper))
        return True


async def _release_when_done(run: asyncio.Future[Any], slot: StreamSlot, keeper: asyncio.Task[None] | None) -> None:
    """Hold ``slot`` until ``run`` ends (without ever cancelling it), then give the slot back."""
    try:
        await asyncio.wait([run])
    finally:
        _runs_holding.pop(run, None)
        if keeper is not None:
            keeper.cancel()
        await _release(slot)


# The runs that outlived their stream holding a slot in this process, and whose key's slot it is.
_runs_holding: dict[asyncio.Future[Any], str] = {}

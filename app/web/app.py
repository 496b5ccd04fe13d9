"""``create_app()``: the routes, the request checks, and the process-wide resources.

Every protocol adapter gets two routes: ``POST /agents/{agent}/{route}`` and its short
``default_path`` for the default agent. Every refusal is a JSON error naming what is wrong.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import MutableMapping, Sequence
from contextlib import AbstractAsyncContextManager
from functools import partial
from pathlib import Path
from typing import Any, cast

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import ClientDisconnect, Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Route
from starlette.types import Receive, Scope, Send

from chatgate.access import (
    access_middleware,
    not_started,
    served_path,
)
from chatgate.caller import caller_of
from chatgate.config import Config, default_config
from chatgate.errors import RequestError, StoreUnavailable, error_response
from chatgate.protocol import UIProtocol, discover_protocols
from chatgate.run import Agent
from chatgate.store import BUSY_RETRY_AFTER, ThreadBusy, ThreadError, UnknownThread
from chatgate.telemetry import Metrics, loggable, metrics_endpoint, observe_request
from chatgate.tracing import start_telemetry
from chatgate.usage import PersonBudget
from chatgate.web.capabilities import capabilities_path, capabilities_routes
from chatgate.web.chat import chat_endpoint
from chatgate.web.chat_page import PAGE_PATHS, chat_page_routes
from chatgate.web.copilotkit import copilotkit_routes
from chatgate.web.feedback import feedback_routes
from chatgate.web.files import file_routes
from chatgate.web.lifespan import chatgate_lifespan
from chatgate.web.openapi import openapi_endpoint
from chatgate.web.readiness import readyz
from chatgate.web.runs import resume_endpoint, stop_routes
from chatgate.web.services import Services, running_of, services_of
from chatgate.web.sse import RAW_SEND_KEY
from chatgate.web.threads import thread_routes
from chatgate.web.unread_body import UnreadBody
from chatgate.web.usage import usage_routes

__all__ = ["ChatgateApp", "create_app"]

logger = logging.getLogger("chatgate.server")


_ERROR_LOGGED = "chatgate.error_logged"

STORE_RETRY_AFTER_SECONDS = StoreUnavailable.retry_after
"""The ``Retry-After`` of a 503 ``store_unavailable`` (``store_busy`` has ``StoreBusy.retry_after``)."""


class ChatgateApp(Starlette):
    """Starlette, plus the server's own ``send`` left in the scope for ``EventStreamResponse``'s body.

    No exception leaves the app for the server: uvicorn closes the connection on one, even after a
    complete response, which resets a keep-alive client's next request. Starlette's error middleware
    logs an unexpected exception's traceback, answers 500 JSON if the response has not started, and
    re-raises; that re-raise ends here, where a started response's body is ended so the connection
    stays usable.
    """

    def lifespan(self, host: object = None) -> AbstractAsyncContextManager[None]:
        """The start and stop of chatgate, for the app it is mounted in (docs/embedding.md).

        Starlette and FastAPI run no lifespan of a mounted app: enter this one from the host's, either
        ``FastAPI(lifespan=chat.lifespan)`` or ``async with chat.lifespan():`` inside your own lifespan.
        ``host`` is the app whose lifespan calls it, and is not used. Served on its own, chatgate runs it
        itself.
        """
        return cast(AbstractAsyncContextManager[None], self.router.lifespan_context(self))

    @property
    def services(self) -> Services:
        """The app's services (app/web/services.py), kept in ``app.state.services``."""
        return services_of(self)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Record the unwrapped ``send``, then handle the request as Starlette does."""
        scope[RAW_SEND_KEY] = send
        if scope["type"] != "http":
            await super().__call__(scope, receive, send)
            return
        services = self.services
        if not services.started:  # mounted, and the host never entered ``lifespan``: no agents yet
            await error_response(not_started())(scope, receive, send)
            return
        started = ended = False
        unread = UnreadBody(scope, receive)
        if unread.pending:  # an answer before the whole body closes the connection (app/web/unread_body.py)
            receive = unread.receive

        async def tracked(message: MutableMapping[str, Any]) -> None:
            nonlocal started, ended
            if message["type"] == "http.response.start":
                started = True
                unread.close_if_unread(message)
            elif not message.get("more_body", False):
                ended = True
            await send(message)

        try:
            await observe_request(scope, receive, tracked, super().__call__, services.metrics)
        except Exception:
            if not scope.get(_ERROR_LOGGED):  # ``_unexpected_error_handler`` logs all it sees
                logger.exception("unexpected error handling %s %s", scope["method"], loggable(scope.get("path", "")))
            if not started:
                await _internal_error()(scope, receive, tracked)
            elif not ended:
                # A stream's body bypasses ``tracked`` (app/web/sse.py): it may have ended already, and the
                # server then refuses a second end, which leaves nothing more to do.
                with contextlib.suppress(RuntimeError):
                    await send({"type": "http.response.body", "body": b"", "more_body": False})


def create_app(
    config: Config | None = None,
    *,
    protocols: Sequence[UIProtocol] | None = None,
    config_path: Path | None = None,
    person_budget: PersonBudget | None = None,
) -> ChatgateApp:
    """The chatgate ASGI app for ``config`` (the built-in default agent when None).

    Mounted in another app (FastAPI, Starlette), enter its ``lifespan()`` from that app's own
    (docs/embedding.md).

    With ``config_path`` the app reloads that file on SIGHUP or when it changes (see app/config/reload.py).
    ``person_budget`` gives a named person's budget (the identity layer's ``[auth.jwt.budget]``).
    """
    config = config if config is not None else default_config()
    protocols = list(protocols) if protocols is not None else discover_protocols()
    metrics = Metrics()
    # Bound at creation, like Redis at start: a reload that changes [telemetry] takes effect on restart.
    services = Services.create(metrics, start_telemetry(config.telemetry, metrics.registry))
    lifespan = partial(
        chatgate_lifespan, config=config, protocols=protocols, config_path=config_path, person_budget=person_budget
    )
    app = ChatgateApp(
        routes=_routes(protocols, services, config.copilotkit.path),
        middleware=access_middleware(config, services, PAGE_PATHS),
        lifespan=lifespan,
        exception_handlers={
            RequestError: _request_error_handler,
            ThreadError: _thread_error_handler,
            StoreUnavailable: _store_unavailable_handler,
            ClientDisconnect: _client_gone_handler,
            HTTPException: _http_error_handler,
            Exception: _unexpected_error_handler,
        },
    )
    app.state.services = services
    return app


def _routes(protocols: Sequence[UIProtocol], services: Services, copilotkit: str | None) -> list[BaseRoute]:
    """The probes, the listing and the page, then each protocol's chat and resume routes, then the rest.

    ``copilotkit`` is ``[copilotkit] path``, where CopilotKit's runtime routes go (none when None).
    """
    routes: list[BaseRoute] = [
        Route("/healthz", _healthz, methods=["GET"]),
        Route("/readyz", readyz, methods=["GET"]),
        Route("/metrics", metrics_endpoint(services.metrics), methods=["GET"]),
        Route("/openapi.json", openapi_endpoint(protocols), methods=["GET"]),
        Route("/agents", _list_agents_endpoint(protocols), methods=["GET"]),
        *chat_page_routes(),
    ]
    for protocol in protocols:
        endpoint = chat_endpoint(protocol)
        for path in (f"/agents/{{agent}}/{protocol.route}", protocol.default_path):
            routes.append(Route(path, endpoint, methods=["POST"]))
            routes.append(Route(f"{path}/{{thread_id}}/stream", resume_endpoint(protocol), methods=["GET"]))
    routes += thread_routes(protocols) + stop_routes(protocols) + usage_routes() + feedback_routes() + file_routes()
    return routes + capabilities_routes(protocols) + copilotkit_routes(copilotkit, protocols)


async def _healthz(request: Request) -> Response:
    return JSONResponse({"status": "ok"})


def _list_agents_endpoint(protocols: Sequence[UIProtocol]) -> Any:
    async def list_agents(request: Request) -> Response:
        registry = running_of(request).agents
        default = registry.default
        caller = caller_of(request)
        agents = [
            {
                "name": agent.name,
                "model": agent.config.model,
                "manage_system_prompt": agent.config.manage_system_prompt,
                "leak_guard": agent.config.leak_guard_mode,
                "default": default is not None and agent.name == default.name,
                "description": agent.config.description,
                "context": _context_info(agent),
                "prompt_version": agent.prompt_facts.version,
                "variants": {
                    label: {"weight": agent.config.variants[label].weight, "prompt_version": one.prompt_facts.version}
                    for label, one in agent.variants.items()
                },
                "protocols": {
                    protocol.name: served_path(request.scope, f"/agents/{agent.name}/{protocol.route}")
                    for protocol in protocols
                },
                "capabilities": {
                    protocol.name: served_path(request.scope, path)
                    for protocol in protocols
                    if (path := capabilities_path(protocol, agent.name)) is not None
                },
            }
            for agent in registry
            if caller.may_use(agent.name)
        ]
        return JSONResponse({"agents": agents})

    return list_agents


def _context_info(agent: Agent) -> dict[str, Any] | None:
    """The agent's context window (``"auto"`` until the model server said) and strategy; None without one."""
    budget = agent.context
    if budget is None:
        return None
    return {"window": budget.window if budget.window is not None else "auto", "strategy": budget.strategy}


async def _request_error_handler(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, RequestError)
    return error_response(exc)


_THREAD_ERRORS: dict[type[ThreadError], tuple[int, str, dict[str, str]]] = {
    UnknownThread: (404, "unknown_thread", {}),
    ThreadBusy: (409, "thread_busy", {"Retry-After": str(BUSY_RETRY_AFTER)}),
}
"""The HTTP answer to each of the store's refusals."""


async def _thread_error_handler(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, ThreadError)
    status, code, headers = _THREAD_ERRORS[type(exc)]
    return error_response(RequestError(status, code, str(exc), headers=headers))


async def _http_error_handler(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, HTTPException)
    code = {404: "not_found", 405: "method_not_allowed"}.get(exc.status_code, "http_error")
    return error_response(RequestError(exc.status_code, code, str(exc.detail)))


async def _client_gone_handler(request: Request, exc: Exception) -> Response:
    # The client closed the connection before sending the whole body: nobody is left to answer.
    logger.info("client went away while sending the body of %s %s", request.method, loggable(request.url.path))
    return Response(status_code=400)


async def _unexpected_error_handler(request: Request, exc: Exception) -> Response:
    # Starlette calls this even after the response started (and then sends nothing of it).
    request.scope[_ERROR_LOGGED] = True
    path = loggable(request.url.path)
    logger.exception("unexpected error handling %s %s", request.method, path, exc_info=exc)
    return _internal_error()


async def _store_unavailable_handler(request: Request, exc: Exception) -> Response:
    # An outage or a lock held elsewhere, not a bug: one line with the cause, no traceback.
    assert isinstance(exc, StoreUnavailable)
    logger.warning("%s %s: %s", request.method, loggable(request.url.path), exc)
    headers = {"Retry-After": str(exc.retry_after)}
    return error_response(RequestError(503, exc.code, exc.public_message, headers=headers))


def _internal_error() -> JSONResponse:
    return JSONResponse({"error": {"code": "internal_error", "message": "An internal error occurred."}}, 500)

"""CopilotKit's single-route transport: one ``POST {base}`` carrying ``{method, params, body}``.

``<CopilotKit>`` (v1) and a provider with ``useSingleEndpoint`` send every runtime call as such an
envelope. Each served method is handed to the multi-route endpoint it names (app/web/copilotkit.py), as
a request whose path parameters come from ``params`` and whose body is ``body``: the same checks, the
same stream, the same refusals. A runtime method chatgate does not serve answers 501, anything else 400,
both in the runtime's error shape.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.types import Message, Receive

from chatgate.access import read_body
from chatgate.errors import RequestError
from chatgate.strict_json import client_json, dump_json
from chatgate.web.services import running_of

__all__ = ["RUNTIME_METHODS", "not_served", "runtime_error", "single_route_endpoint"]

Endpoint = Callable[[Request], Awaitable[Response]]

RUNTIME_METHODS = frozenset(
    {
        "agent/run",
        "agent/suggest",
        "agent/connect",
        "agent/stop",
        "info",
        "inspector/metadata",
        "inspector/learning",
        "transcribe",
        "resource/request",
    }
)
"""Every method the runtime's single route accepts (its ``single-route-helpers``)."""

_PARAMS = {"agent/run": ("agentId",), "agent/connect": ("agentId",), "agent/stop": ("agentId", "threadId")}
"""The ``params`` each served method needs, as strings."""

_PATH_PARAMS = {"agentId": "agent", "threadId": "thread_id"}


def single_route_endpoint(served: Mapping[str, Endpoint]) -> Endpoint:
    """``POST {base}``: the envelope's method, dispatched to ``served[method]``."""

    async def single_route(request: Request) -> Response:
        envelope = await _envelope(request)
        method = envelope.get("method")
        if not isinstance(method, str) or method not in RUNTIME_METHODS:
            return _invalid(f"unsupported method {method!r}: one of {', '.join(sorted(served))}")
        endpoint = served.get(method)
        if endpoint is None:
            message = (
                f"chatgate does not serve CopilotKit's {method!r} method (docs/copilotkit.md lists what it serves)"
            )
            return JSONResponse({"error": "Not implemented", "code": "not_served", "message": message}, 501)
        params = envelope.get("params") or {}
        path_params: dict[str, str] = {}
        for name in _PARAMS.get(method, ()):
            value = params.get(name) if isinstance(params, dict) else None
            if not isinstance(value, str) or not value.strip():
                return _invalid(f"params.{name}: a non-empty string is required")
            path_params[_PATH_PARAMS[name]] = value
        body = envelope.get("body")
        if body is None and method in ("agent/run", "agent/connect"):
            return _invalid(f"body: {method} needs the run's input")
        inner = dump_json(body if body is not None else {})
        scope = {**request.scope, "path_params": path_params}
        return await endpoint(Request(scope, _replaying(inner, request.receive)))

    return single_route


async def _envelope(request: Request) -> dict[str, Any]:
    """The request's JSON object; a 415, 400 or 422 naming what is wrong with it otherwise."""
    content_type = request.headers.get("content-type", "")
    if content_type.split(";", 1)[0].strip().lower() != "application/json":
        raise RequestError(415, "unsupported_media_type", "the single route takes JSON: content-type: application/json")
    body = await read_body(request, running_of(request).agents.config.server)
    try:
        envelope = client_json(body, "(body)")
    except ValueError:
        raise RequestError(400, "invalid_request", "the body is not JSON") from None
    if not isinstance(envelope, dict):
        raise RequestError(400, "invalid_request", "the body must be a JSON object {method, params, body}")
    return envelope


def not_served(what: str) -> Response:
    """501 in the runtime's error shape: chatgate does not serve CopilotKit's ``what``."""
    message = f"chatgate does not serve CopilotKit's {what} (docs/copilotkit.md lists what it serves)"
    return runtime_error(501, "Not implemented", "not_served", message)


def runtime_error(status: int, error: str, code: str, message: str) -> Response:
    """A refusal in the runtime's own shape: ``{"error", "code", "message"}``."""
    return JSONResponse({"error": error, "code": code, "message": message}, status_code=status)


def _invalid(message: str) -> Response:
    return runtime_error(400, "invalid_request", "invalid_request", message)


def _replaying(body: bytes, receive: Receive) -> Receive:
    """A ``receive`` that gives ``body`` once, then the connection's own messages (its disconnect)."""
    given = False

    async def replay() -> Message:
        nonlocal given
        if given:
            return await receive()
        given = True
        return {"type": "http.request", "body": body, "more_body": False}

    return replay

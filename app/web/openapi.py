"""``GET /openapi.json``: the OpenAPI 3.1 description of every route, generated from the route table.

Every route the app serves appears, with its path parameters and the error shape on every 4xx/5xx.
What a route takes and returns comes from a small registry: ``OPERATIONS`` for the fixed routes, and
for the chat routes each protocol's ``request_schema()`` (adapters build it from their pydantic wire
models, so the description cannot drift from what is validated). A route nobody documented still
appears, with a summary from its endpoint's docstring.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Route

from chatgate.protocol import DescribesRequests, UIProtocol

__all__ = ["ERROR_SCHEMA", "OPERATIONS", "Operation", "openapi_document", "openapi_endpoint"]

ERROR_SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["error"],
    "properties": {
        "error": {
            "type": "object",
            "required": ["code", "message"],
            "properties": {
                "code": {"type": "string", "description": "a stable machine-readable code, e.g. invalid_request"},
                "message": {"type": "string", "description": "what is wrong, for a human"},
                "details": {
                    "type": "array",
                    "description": "one entry per wrong field",
                    "items": {"type": "object", "additionalProperties": {"type": "string"}},
                },
            },
        }
    },
}
"""Every refusal and error: ``{"error": {"code", "message", "details"?}}``."""

_ERROR_RESPONSE = {
    "description": "a refused request or an error",
    "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}},
}
_JSON_OBJECT = {"application/json": {"schema": {"type": "object"}}}
_JSON_OK = {"description": "OK", "content": _JSON_OBJECT}


@dataclass(frozen=True, slots=True)
class Operation:
    """What one route takes and answers: a summary, an optional JSON body schema, its 2xx responses."""

    summary: str
    responses: Mapping[str, Any] = field(
        default_factory=lambda: {"200": {"description": "OK", "content": _JSON_OBJECT}}
    )
    request_schema: Mapping[str, Any] | None = None


def _text(description: str, media_type: str) -> dict[str, Any]:
    return {"description": description, "content": {media_type: {"schema": {"type": "string"}}}}


OPERATIONS: dict[tuple[str, str], Operation] = {
    ("GET", "/healthz"): Operation("Liveness: the process answers"),
    ("GET", "/readyz"): Operation(
        "Readiness: the config is loaded and every configured dependency answers",
        {
            "200": {"description": "ready", "content": _JSON_OBJECT},
            "503": {"description": "not ready: names what is down", "content": _JSON_OBJECT},
        },
    ),
    ("GET", "/agents"): Operation("The agents this caller may use, with their routes"),
    ("GET", "/metrics"): Operation(
        "Prometheus metrics (open without keys; otherwise admin keys only)",
        {"200": _text("Prometheus text exposition format", "text/plain")},
    ),
    ("GET", "/openapi.json"): Operation("This document"),
    ("GET", "/"): Operation(
        "The chat page (off with [server] chat_page = false)", {"200": _text("the page", "text/html")}
    ),
    ("GET", "/static/{name}"): Operation(
        "A file of the chat page: chat.js or chat.css",
        {"200": _text("the file", "text/javascript"), "404": {"description": "no such file, or the page is off"}},
    ),
}
"""The fixed routes' operations; another module may add its own routes here."""

_STREAM_RESPONSES = {
    "200": _text(
        "an SSE stream in the protocol's format; it always ends with its terminal event "
        "(AG-UI: RUN_FINISHED or RUN_ERROR; useChat: finish or error, then [DONE])",
        "text/event-stream",
    )
}
_RESUME = Operation(
    "Resume the running run of the caller's stored thread (useChat resume: true): its stream from the start",
    {
        **_STREAM_RESPONSES,
        "204": {"description": "nothing runs on this thread (or it cannot be replayed): no stream to resume"},
    },
)
_PARAM = re.compile(r"{([^}:]+)(?::[^}]*)?}")


def openapi_document(routes: Sequence[BaseRoute], protocols: Sequence[UIProtocol]) -> dict[str, Any]:
    """The OpenAPI 3.1 document of ``routes``; the chat routes of ``protocols`` get their request bodies."""
    schemas: dict[str, Any] = {"Error": ERROR_SCHEMA}
    operations = dict(OPERATIONS)
    for protocol in protocols:
        body = _protocol_body(protocol, schemas)
        chat = Operation(f"Run an agent over {protocol.name}", _STREAM_RESPONSES, body)
        for path in (f"/agents/{{agent}}/{protocol.route}", protocol.default_path):
            operations[("POST", path)] = chat
            operations[("GET", f"{path}/{{thread_id}}/stream")] = _RESUME

    paths: dict[str, dict[str, Any]] = {}
    for route in routes:
        if not isinstance(route, Route) or not route.include_in_schema:
            continue
        for method in sorted((route.methods or {"GET"}) - {"HEAD"}):
            operation = operations.get((method, route.path)) or _undocumented(route)
            paths.setdefault(_PARAM.sub(r"{\1}", route.path), {})[method.lower()] = _operation(route.path, operation)
    return {
        "openapi": "3.1.0",
        "info": {
            "title": "chatgate",
            "version": "1",
            "description": "Chat frontends (useChat, AG-UI) to any LLM. Errors are always "
            '{"error": {"code", "message", "details"?}}.',
        },
        "paths": paths,
        "components": {"schemas": schemas},
    }


def _undocumented(route: Route) -> Operation:
    doc = (route.endpoint.__doc__ or route.name or route.path).strip().splitlines()[0]
    return Operation(doc)


def _operation(path: str, operation: Operation) -> dict[str, Any]:
    described: dict[str, Any] = {
        "summary": operation.summary,
        "responses": {**operation.responses, "4XX": _ERROR_RESPONSE, "5XX": _ERROR_RESPONSE},
    }
    parameters = [
        {"name": name, "in": "path", "required": True, "schema": {"type": "string"}} for name in _PARAM.findall(path)
    ]
    if parameters:
        described["parameters"] = parameters
    if operation.request_schema is not None:
        described["requestBody"] = {
            "required": True,
            "content": {"application/json": {"schema": operation.request_schema}},
        }
    return described


def _protocol_body(protocol: UIProtocol, schemas: dict[str, Any]) -> Mapping[str, Any] | None:
    """The protocol's request body as a reference, its JSON schema moved into ``schemas``."""
    if not isinstance(protocol, DescribesRequests):
        return {"type": "object"}
    prefix = f"{protocol.name}."
    schema: dict[str, Any] = dict(protocol.request_schema(f"#/components/schemas/{prefix}{{model}}"))
    for name, definition in schema.pop("$defs", {}).items():
        schemas[prefix + name] = definition
    name = prefix + str(schema.get("title", "Request"))
    schemas[name] = schema
    return {"$ref": f"#/components/schemas/{name}"}


def openapi_endpoint(protocols: Sequence[UIProtocol]) -> Any:
    """The ``GET /openapi.json`` endpoint; the document is built on first use and kept."""
    cached: list[dict[str, Any]] = []

    async def openapi(request: Request) -> Response:
        """The OpenAPI document of this app."""
        if not cached:
            cached.append(openapi_document(request.app.routes, protocols))
        return JSONResponse(cached[0])

    return openapi

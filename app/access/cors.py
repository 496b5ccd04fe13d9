"""CORS for browser apps on other origins: ``[server] cors_origins``, exact origins (``"*"`` only without keys).

The request headers allowed are ``ALLOWED_HEADERS`` plus ``[server] cors_headers``.

Starlette's ``CORSMiddleware`` with two changes: a request from an origin not on the list gets no CORS
header at all (Starlette would still add ``Access-Control-Expose-Headers``), and a refused preflight is a
JSON error like every other refusal. Preflights are answered before the access layer, so a browser can
ask without a key; the real request then needs one. Stream frames bypass this middleware (app/web/sse.py).
"""

from __future__ import annotations

from starlette.datastructures import Headers
from starlette.middleware import Middleware
from starlette.middleware.cors import CORSMiddleware
from starlette.responses import Response
from starlette.types import Receive, Scope, Send

from chatgate.config import ServerSettings
from chatgate.errors import RequestError, error_response

__all__ = ["ALLOWED_HEADERS", "EXPOSED_HEADERS", "cors_middleware"]

ALLOWED_HEADERS = (
    "content-type",
    "authorization",
    "x-api-key",
    "x-chatgate-user",
    "x-request-id",
    "traceparent",
    "tracestate",
    "baggage",
    "sentry-trace",
)
"""What useChat, HttpAgent and a trusted backend send, and the tracing headers of W3C Trace Context and
Baggage (OpenTelemetry) and Sentry, which a browser app's instrumentation adds to every request.
``[server] cors_headers`` adds others."""
EXPOSED_HEADERS = ("x-request-id", "retry-after")
_METHODS = ("GET", "POST", "PUT", "PATCH", "DELETE")


class _ExactCORS(CORSMiddleware):
    async def simple_response(self, scope: Scope, receive: Receive, send: Send, request_headers: Headers) -> None:
        origin = request_headers.get("origin")
        if origin is None or not self.is_allowed_origin(origin):
            await self.app(scope, receive, send)  # nothing to add, and no wrapped send
            return
        await super().simple_response(scope, receive, send, request_headers)

    def preflight_response(self, request_headers: Headers) -> Response:
        response = super().preflight_response(request_headers)
        if response.status_code == 200:
            return response
        refused = bytes(response.body).decode().removeprefix("Disallowed CORS ")
        origin = request_headers["origin"]
        return error_response(
            RequestError(
                403 if "origin" in refused else 400,
                "cors_refused",
                f"cross-origin request from {origin!r} refused ({refused}); "
                "[server] cors_origins lists the allowed origins",
            )
        )


def cors_middleware(settings: ServerSettings) -> list[Middleware]:
    """The CORS middleware for ``settings.cors_origins`` (none when the list is empty)."""
    if not settings.cors_origins:
        return []
    return [
        Middleware(
            _ExactCORS,
            allow_origins=settings.cors_origins,
            allow_methods=_METHODS,
            allow_headers=(*ALLOWED_HEADERS, *settings.cors_headers),
            expose_headers=EXPOSED_HEADERS,
            max_age=600,
        )
    ]

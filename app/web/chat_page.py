"""``GET /``: the chat page, a small useChat client shipped inside the package (``chatgate/static``).

The page is three files read once from the installed package: ``index.html``, ``chat.css`` and
``chat.js`` (the bundle built from tests/clients/page by ``scripts/build-page.sh``). Nothing is
fetched from elsewhere. The page speaks to this server only, so a strict Content-Security-Policy
holds: no inline script, no other origin, nothing the model writes can run. ``[server] chat_page =
false`` turns it off (404), read per request so a reload applies.
"""

from __future__ import annotations

from functools import cache
from importlib.resources import files

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route

from chatgate.errors import RequestError
from chatgate.identity import SIGN_IN_PATH, issuer_origin, sign_in_settings
from chatgate.web.services import running_of

__all__ = ["PAGE_FILES", "PAGE_PATHS", "chat_page_routes", "page_file"]

PAGE_FILES = {
    "index.html": "text/html; charset=utf-8",
    "chat.css": "text/css; charset=utf-8",
    "chat.js": "text/javascript; charset=utf-8",
}
"""The page's files in ``chatgate/static`` and their content types; nothing else is served."""

PAGE_PATHS = frozenset({"/", SIGN_IN_PATH, *(f"/static/{name}" for name in PAGE_FILES if name != "index.html")})
"""The paths the page is served on: open without a key, since the page itself asks for one (or signs in)."""

_HEADERS = {
    "content-security-policy": (
        "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
        "connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
    ),
    "x-content-type-options": "nosniff",
    "referrer-policy": "no-referrer",
    "cache-control": "no-cache",
}


@cache
def page_file(name: str) -> bytes:
    """The bytes of one of ``PAGE_FILES`` as installed in the package (read once)."""
    return (files("chatgate") / "static" / name).read_bytes()


def _serve(request: Request, name: str) -> Response:
    config = running_of(request).agents.config
    if not config.server.chat_page:
        raise RequestError(404, "not_found", "the chat page is turned off ([server] chat_page = false)")
    headers = _HEADERS
    issuer = issuer_origin(config)
    if issuer is not None:  # the page signs people in: it fetches the issuer's discovery and token endpoint
        policy = headers["content-security-policy"].replace("connect-src 'self'", f"connect-src 'self' {issuer}")
        headers = {**headers, "content-security-policy": policy}
    return Response(page_file(name), media_type=PAGE_FILES[name], headers=headers)


async def _index(request: Request) -> Response:
    """The chat page."""
    return _serve(request, "index.html")


async def _static(request: Request) -> Response:
    """A file of the chat page: its script or its style sheet."""
    name = request.path_params["name"]
    if name not in PAGE_FILES or name == "index.html":
        raise RequestError(404, "not_found", f"no page file named {name!r}")
    return _serve(request, name)


async def _sign_in(request: Request) -> Response:
    """The page's sign-in settings under the config in force."""
    return sign_in_settings(running_of(request).agents.config)


def chat_page_routes() -> list[BaseRoute]:
    """The page's routes: ``GET /`` and ``GET /static/{name}``."""
    return [
        Route("/", _index, methods=["GET"]),
        Route(SIGN_IN_PATH, _sign_in, methods=["GET"]),
        Route("/static/{name}", _static, methods=["GET"]),
    ]

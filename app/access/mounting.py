"""chatgate mounted under a path prefix: the path a request has inside chatgate.

Mounted in another ASGI app (``Mount("/llm", chatgate_app)``, FastAPI's ``app.mount``) or served by
uvicorn with ``root_path``, a request's ``scope["path"]`` keeps the whole path (``/llm/healthz``) and
``scope["root_path"]`` holds the prefix (``/llm``), as the ASGI spec says. Routing strips the prefix;
everything else in chatgate that decides by path (the access layer's open paths, the routes ``GET
/agents`` advertises, app/web/app.py) reads it through here, so it decides the same under any prefix.
"""

from __future__ import annotations

from starlette.types import Scope

__all__ = ["route_path", "served_path"]


def route_path(scope: Scope) -> str:
    """The request's path inside chatgate: ``scope["path"]`` without the ``root_path`` it is mounted at."""
    path: str = scope["path"]
    root: str = scope.get("root_path", "")
    if root and path.startswith(root) and path[len(root) : len(root) + 1] in ("", "/"):
        return path[len(root) :] or "/"
    return path


def served_path(scope: Scope, path: str) -> str:
    """``path`` (a chatgate route, ``/agents/...``) as a client reaches it: under the mount's prefix."""
    root: str = scope.get("root_path", "")
    return root.rstrip("/") + path

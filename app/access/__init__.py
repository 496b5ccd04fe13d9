"""The access layer: who may call, which agents, how often and how much, and from which origins.

One module per rule: ``keys.py`` (API keys to a ``Caller``), ``limits.py`` and ``redis_limits.py``
(per-key ``rpm`` and ``max_concurrent_streams``, in process or shared through Redis),
``request_limits.py`` (sizes of one request, its body first), ``cors.py`` (browser origins), ``mounting.py``
(a request's path inside chatgate when it is mounted under a prefix, which the open paths are matched on),
and ``gate.py``, where the request path meets them.
"""

from __future__ import annotations

from starlette.middleware import Middleware

from chatgate.access.cors import cors_middleware
from chatgate.access.gate import (
    OPEN_PATHS,
    AccessMiddleware,
    AccessServices,
    AccessState,
    check_agent,
    hold_stream_slot,
    not_started,
    resolve_agent,
    signing_keys_ready,
)
from chatgate.access.keys import USER_HEADER, KeyRing
from chatgate.access.mounting import route_path, served_path
from chatgate.access.request_limits import check_request_limits, read_body, read_within
from chatgate.config import Config

__all__ = [
    "OPEN_PATHS",
    "USER_HEADER",
    "AccessMiddleware",
    "AccessServices",
    "AccessState",
    "KeyRing",
    "access_middleware",
    "check_agent",
    "check_request_limits",
    "hold_stream_slot",
    "not_started",
    "read_body",
    "read_within",
    "resolve_agent",
    "route_path",
    "served_path",
    "signing_keys_ready",
]


def access_middleware(
    config: Config, services: AccessServices, open_paths: frozenset[str] = frozenset()
) -> list[Middleware]:
    """The middleware of the access layer, outermost first: CORS (so refusals carry it), then keys and rpm.

    ``services`` are the app's, read on each request. ``open_paths`` pass without a key, besides the
    probes (``OPEN_PATHS``): the app's chat page files.
    """
    return [*cors_middleware(config.server), Middleware(AccessMiddleware, services=services, open_paths=open_paths)]

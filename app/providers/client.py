"""The process's one HTTP client for every upstream model API, on chatgate's own transport."""

from __future__ import annotations

import http.cookiejar
from typing import Any

import httpx

from chatgate.providers.proxies import environment_proxies
from chatgate.providers.transport import UpstreamTransport

__all__ = ["upstream_client"]

_PROXIED_LIMITS = httpx.Limits(max_connections=None, max_keepalive_connections=32, keepalive_expiry=30.0)
"""Origins reached through a proxy: as many streams as asked for, idle connections kept 30 s."""


def upstream_client() -> httpx.AsyncClient:
    """The process's one HTTP client for every upstream model API.

    Requests go through chatgate's own HTTP/1.1 transport (app/providers/transport.py): connections are
    kept alive between calls (no new TLS handshake per request), there is no cap on concurrent streams,
    opening a stream costs the same however many are open, and timeouts are set per request by each
    provider. ``HTTP_PROXY``/``HTTPS_PROXY``/``ALL_PROXY``/``NO_PROXY`` apply as in any httpx client
    (httpx ignores them once a transport is given, so they are mounted here): proxied origins go
    through httpx's own transport, with no cap on connections. It keeps no cookies: every user's
    requests share it, so a cookie one upstream answer set would go out with everyone's next request.
    """
    mounts: dict[str, httpx.AsyncBaseTransport | None] = {
        pattern: httpx.AsyncHTTPTransport(proxy=proxy, limits=_PROXIED_LIMITS) if proxy else None
        for pattern, proxy in environment_proxies().items()
    }
    return httpx.AsyncClient(
        timeout=httpx.Timeout(10.0, read=None),
        transport=UpstreamTransport(),
        mounts=mounts,
        cookies=http.cookiejar.CookieJar(policy=_NoCookies()),
    )


class _NoCookies(http.cookiejar.DefaultCookiePolicy):
    """A cookie policy that accepts no cookie, so the shared client's jar stays empty."""

    def set_ok(self, cookie: http.cookiejar.Cookie, request: Any) -> bool:
        """Refuse every cookie an upstream sets."""
        return False

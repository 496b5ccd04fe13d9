"""The environment's proxies (``HTTP_PROXY``, ``HTTPS_PROXY``, ``ALL_PROXY``, ``NO_PROXY``) as httpx mounts.

httpx reads them itself only when a client has no transport of its own, and chatgate's client has one
(app/providers/transport.py), so they are read here and mounted. The rules are httpx 0.28's, written
against the standard library (``urllib.request.getproxies``) instead of httpx's private helpers:
``NO_PROXY`` names hosts, IP addresses, ``localhost``, domain suffixes or whole URLs, and ``*`` turns
every proxy off.
"""

from __future__ import annotations

import ipaddress
from urllib.request import getproxies

__all__ = ["environment_proxies"]


def environment_proxies() -> dict[str, str | None]:
    """URL patterns to proxy URLs (``None``: go direct), as httpx would mount them from the environment."""
    proxy_info = getproxies()  # also the system's settings on Windows and macOS
    mounts: dict[str, str | None] = {}
    for scheme in ("http", "https", "all"):  # not non-HTTP ones such as TRAVIS_APT_PROXY
        if proxy_info.get(scheme):
            proxy = proxy_info[scheme]
            mounts[f"{scheme}://"] = proxy if "://" in proxy else f"http://{proxy}"
    for host in (entry.strip() for entry in proxy_info.get("no", "").split(",")):
        if host == "*":
            return {}
        if not host:
            continue
        if "://" in host:
            mounts[host] = None
        elif _is_ip(host, ipaddress.IPv4Address) or host.lower() == "localhost":
            mounts[f"all://{host}"] = None
        elif _is_ip(host, ipaddress.IPv6Address):
            mounts[f"all://[{host}]"] = None
        else:  # a domain: "example.com" matches it and its subdomains, ".example.com" only subdomains
            mounts[f"all://*{host}"] = None
    return mounts


def _is_ip(host: str, kind: type[ipaddress.IPv4Address] | type[ipaddress.IPv6Address]) -> bool:
    try:
        kind(host.split("/")[0])
    except ValueError:
        return False
    return True

"""What Chromium itself saw on the wire, read through the DevTools protocol.

Playwright's ``page.on("response")`` never shows CORS preflights, and a refused cross-origin fetch is
only "Failed to fetch" to the page. Chromium's ``Network`` domain reports both: every response with
its type (``Preflight``, ``Fetch``, ...) and headers, and for a failed load the CORS error it saw.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from playwright.async_api import Page

__all__ = ["NetworkLog", "Seen", "record_network"]


@dataclass
class Seen:
    """One request as Chromium reported it: its response, or the CORS error that failed it."""

    method: str
    url: str
    request_headers: dict[str, str]
    kind: str = ""
    status: int | None = None
    headers: dict[str, str] = field(default_factory=dict)
    cors_error: str | None = None

    def cors_headers(self) -> dict[str, str]:
        """The response's ``access-control-*`` headers."""
        return {name: value for name, value in self.headers.items() if name.startswith("access-control-")}


@dataclass
class NetworkLog:
    """Requests by DevTools request id, in the order Chromium started them."""

    requests: dict[str, Seen] = field(default_factory=dict)

    def to(self, origin: str, method: str) -> list[Seen]:
        """The ``method`` requests sent to ``origin`` (DevTools may report a preflight after its request)."""
        return [s for s in self.requests.values() if s.url.startswith(origin + "/") and s.method == method]

    def _sent(self, event: dict[str, Any]) -> None:
        request = event["request"]
        headers = {name.lower(): value for name, value in request["headers"].items()}
        self.requests[event["requestId"]] = Seen(request["method"], request["url"], headers)

    def _received(self, event: dict[str, Any]) -> None:
        seen = self.requests.get(event["requestId"])
        if seen is not None:
            seen.kind = event["type"]
            seen.status = event["response"]["status"]
            seen.headers = {name.lower(): value for name, value in event["response"]["headers"].items()}

    def _failed(self, event: dict[str, Any]) -> None:
        seen = self.requests.get(event["requestId"])
        if seen is not None and "corsErrorStatus" in event:
            seen.cors_error = event["corsErrorStatus"]["corsError"]


async def record_network(page: Page) -> NetworkLog:
    """Start recording ``page``'s requests, preflights included."""
    log = NetworkLog()
    session = await page.context.new_cdp_session(page)
    session.on("Network.requestWillBeSent", log._sent)
    session.on("Network.responseReceived", log._received)
    session.on("Network.loadingFailed", log._failed)
    await session.send("Network.enable")
    return log

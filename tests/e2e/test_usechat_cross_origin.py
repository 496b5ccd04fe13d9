"""The useChat app on its own origin (a second loopback port) talking to chatgate through CORS.

Chromium enforces CORS for real here: the app's POST carries ``content-type: application/json`` (and
``authorization`` with a key), so every chat request is preceded by a preflight. What Chromium saw on
the wire, preflights included, is read through the DevTools protocol (tests/network_log.py).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest
import pytest_asyncio
from playwright.async_api import Browser, Page, expect

from chatgate.config import Config
from tests.browser import recorded_page
from tests.conftest import make_config
from tests.network_log import NetworkLog, record_network
from tests.usechat_app import send, wait_ready
from tests.usechat_origin import open_usechat_from

Serve = Callable[[Config], str]

KEY = "browser-app-secret-0123"
AGENTS = {"shop": {"model": "builtin:echo", "vercel_ai_version": "v6"}}

pytestmark = pytest.mark.asyncio(loop_scope="module")


@pytest_asyncio.fixture(loop_scope="module")
async def page(browser: Browser, request: pytest.FixtureRequest) -> AsyncIterator[Page]:
    """A fresh page; its final state is saved as tests/artifacts/usechat-cors-<test>.png."""
    async with recorded_page(browser, f"usechat-cors-{request.node.name}", 900, 600) as page:
        yield page


def chatgate(serve: Serve, cors_origins: list[str], **top: Any) -> str:
    return serve(make_config(AGENTS, server={"cors_origins": cors_origins}, **top))


async def opened(page: Page, app_origin: str, base: str, major: int = 6, **query: str) -> NetworkLog:
    network = await record_network(page)
    await open_usechat_from(page, app_origin, major, base, agent="shop", **query)
    return network


def assistant_text(page: Page) -> Any:
    return page.locator("[data-testid=message][data-role=assistant] [data-testid=part-text]")


@pytest.mark.parametrize("major", [5, 6, 7], ids=lambda m: f"ai{m}")
async def test_a_turn_from_an_allowed_origin(page: Page, serve: Serve, app_origin: str, major: int) -> None:
    base = chatgate(serve, [app_origin])
    network = await opened(page, app_origin, base, major)
    await send(page, "hello from afar")
    await expect(assistant_text(page)).to_contain_text("Last user message: hello from afar")
    await wait_ready(page)
    await expect(page.get_by_test_id("error")).to_have_count(0)

    [preflight], [post] = network.to(base, "OPTIONS"), network.to(base, "POST")
    assert (preflight.kind, preflight.status) == ("Preflight", 200)
    assert preflight.request_headers["origin"] == app_origin
    assert preflight.headers["access-control-allow-origin"] == app_origin
    assert (post.kind, post.status) == ("Fetch", 200)
    assert post.headers["access-control-allow-origin"] == app_origin
    assert "authorization" not in post.request_headers  # no ?key=, no header


async def test_an_origin_not_listed_is_refused_and_the_app_says_so(page: Page, serve: Serve, app_origin: str) -> None:
    base = chatgate(serve, ["https://app.example.com"])
    network = await opened(page, app_origin, base)
    await send(page, "let me in")
    await expect(page.get_by_test_id("status")).to_have_text("error")
    await expect(page.get_by_test_id("error")).to_have_text("Failed to fetch")
    await expect(page.locator("[data-testid=message][data-role=assistant]")).to_have_count(0)

    [preflight], [post] = network.to(base, "OPTIONS"), network.to(base, "POST")
    assert (preflight.kind, preflight.status) == ("Preflight", 403)
    assert preflight.cors_headers() == {}  # nothing that could let a browser through
    assert post.status is None  # Chromium never sent it
    assert post.cors_error == "PreflightMissingAllowOriginHeader"


async def test_no_cors_list_at_all_is_refused_too(page: Page, serve: Serve, app_origin: str) -> None:
    base = chatgate(serve, [])
    network = await opened(page, app_origin, base)
    await send(page, "let me in")
    await expect(page.get_by_test_id("error")).to_have_text("Failed to fetch")
    [preflight], [post] = network.to(base, "OPTIONS"), network.to(base, "POST")
    assert preflight.kind == "Preflight"
    assert preflight.cors_headers() == {}
    assert post.status is None
    assert post.cors_error is not None


async def test_a_key_is_sent_as_a_bearer_header_and_kept_out_of_the_address_bar(
    page: Page, serve: Serve, app_origin: str
) -> None:
    base = chatgate(serve, [app_origin], keys=[{"id": "web", "key": KEY, "agents": ["shop"]}])
    network = await opened(page, app_origin, base, key=KEY)
    assert KEY not in page.url
    await send(page, "with my key")
    await expect(assistant_text(page)).to_contain_text("Last user message: with my key")
    await wait_ready(page)

    [preflight], [post] = network.to(base, "OPTIONS"), network.to(base, "POST")
    assert "authorization" in preflight.request_headers["access-control-request-headers"].split(",")
    assert "authorization" not in preflight.request_headers  # a preflight never carries the key
    assert post.request_headers["authorization"] == f"Bearer {KEY}"
    assert (post.status, post.headers["access-control-allow-origin"]) == (200, app_origin)


async def test_a_wrong_key_gets_a_refusal_the_app_can_read(page: Page, serve: Serve, app_origin: str) -> None:
    base = chatgate(serve, [app_origin], keys=[{"id": "web", "key": KEY, "agents": ["shop"]}])
    network = await opened(page, app_origin, base, key="not-the-key-at-all")
    await send(page, "with a bad key")
    # The 401 carries CORS headers, so the app reads chatgate's JSON error, not just "Failed to fetch".
    await expect(page.get_by_test_id("error")).to_contain_text('"invalid_key"')
    [post] = network.to(base, "POST")
    assert (post.status, post.headers["access-control-allow-origin"]) == (401, app_origin)

"""The useChat browser app on its own origin, calling chatgate cross-origin with people's sign-in tokens.

The tokens are real access tokens of the OpenID provider on loopback (tests/oidc); the app sends its
``key`` option as ``Authorization: Bearer``, so Chromium preflights every request. Each person keeps
their own stored thread: bob, with the same thread id, sees none of alice's messages.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from pathlib import Path

import httpx
import pytest
import pytest_asyncio
from playwright.async_api import Browser, Page, expect

from chatgate.config import Config
from tests.browser import recorded_page
from tests.conftest import make_config
from tests.oidc_provider import OpenIDProvider
from tests.usechat_app import send, wait_ready
from tests.usechat_origin import open_usechat_from

Serve = Callable[[Config], str]

pytestmark = pytest.mark.asyncio(loop_scope="module")


@pytest_asyncio.fixture(loop_scope="module")
async def page(browser: Browser, request: pytest.FixtureRequest) -> AsyncIterator[Page]:
    async with recorded_page(browser, f"usechat-token-{request.node.name}", 900, 600) as page:
        yield page


async def test_each_signed_in_person_keeps_their_own_thread_cross_origin(
    page: Page, serve: Serve, app_origin: str, oidc_provider: OpenIDProvider, tmp_path: Path
) -> None:
    agent = {"model": "builtin:echo", "vercel_ai_version": "v6", "conversations": "server"}
    base = serve(
        make_config(
            {"shop": agent},
            server={"cors_origins": [app_origin]},
            store={"url": f"sqlite:///{tmp_path / 't.db'}"},
            auth={"jwt": {"issuer": oidc_provider.issuer, "audience": "chatgate"}},
        )
    )
    alice = oidc_provider.token("alice")
    await open_usechat_from(page, app_origin, 6, base, agent="shop", key=alice, thread="t-shared")
    await send(page, "hello from alice")
    text = page.locator("[data-testid=message][data-role=assistant] [data-testid=part-text]")
    await expect(text).to_contain_text("Last user message: hello from alice")
    await wait_ready(page)
    await expect(page.get_by_test_id("error")).to_have_count(0)

    thread = f"{base}/agents/shop/threads/t-shared/messages"
    again = {"authorization": f"Bearer {oidc_provider.token('alice')}"}  # alice, another token
    assert [m["role"] for m in httpx.get(thread, headers=again).json()["messages"]] == ["user", "assistant"]
    bob = oidc_provider.token("bob")
    assert httpx.get(thread, headers={"authorization": f"Bearer {bob}"}).status_code == 404

    # Bob opens the same thread id in the app: he gets a new, empty thread of his own.
    await open_usechat_from(page, app_origin, 6, base, agent="shop", key=bob, thread="t-shared")
    await page.get_by_test_id("input").wait_for()
    await expect(page.locator("[data-testid=message]")).to_have_count(0)
    await send(page, "hello from bob")
    await expect(text).to_contain_text("Last user message: hello from bob")
    await wait_ready(page)
    assert len(httpx.get(thread, headers=again).json()["messages"]) == 2  # alice's thread is untouched

"""The chat page signs a person in with a real OpenID provider (authorization code + PKCE) in Chromium.

The provider is npm ``oidc-provider`` on loopback (tests/oidc/server.mjs), whose development login form
takes any name: the person signs in as ``alice``, chats, and owns the thread; ``bob`` does not see it.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import httpx
import pytest
import pytest_asyncio
from playwright.async_api import Browser, Page, expect
from starlette.types import Receive, Scope, Send

from chatgate.web.app import create_app
from tests.browser import recorded_page
from tests.chat_page import TIMEOUT_MS, assistants, send, wait_status
from tests.conftest import LiveServer, make_config
from tests.oidc_provider import OpenIDProvider, running_oidc_provider

pytestmark = pytest.mark.asyncio(loop_scope="module")


class _Later:
    """An ASGI app given later: the server's URL must be known before its config (the provider's redirect)."""

    app = None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        assert self.app is not None
        await self.app(scope, receive, send)


@pytest.fixture
def signed_in_site(tmp_path: Path) -> Iterator[tuple[str, OpenIDProvider]]:
    later = _Later()
    server = LiveServer(later)
    with running_oidc_provider(page_redirects=(f"{server.url}/",)) as provider:
        jwt = {
            "issuer": provider.issuer,
            "audience": "chatgate",
            "page_client_id": "page",
            "page_params": {"scope": "openid offline_access", "resource": "urn:chatgate", "prompt": "consent"},
        }
        agent = {"model": "builtin:echo", "conversations": "server"}
        config = make_config({"bot": agent}, store={"url": f"sqlite:///{tmp_path / 't.db'}"}, auth={"jwt": jwt})
        later.app = create_app(config)
        server.start()
        try:
            yield server.url, provider
        finally:
            server.stop()


@pytest_asyncio.fixture(loop_scope="module")
async def page(browser: Browser, request: pytest.FixtureRequest) -> AsyncIterator[Page]:
    errors: list[str] = []
    async with recorded_page(browser, f"page-{request.node.name}", 1000, 760) as page:
        page.set_default_timeout(TIMEOUT_MS)
        page.on("pageerror", lambda error: errors.append(str(error)))
        page.on("console", lambda message: errors.append(message.text) if "Content Security" in message.text else None)
        yield page
    assert errors == [], f"the page threw: {errors}"


async def test_the_page_signs_a_person_in_and_their_thread_is_theirs(
    page: Page, signed_in_site: tuple[str, OpenIDProvider]
) -> None:
    url, provider = signed_in_site
    await page.goto(f"{url}/")
    await page.wait_for_url(f"{provider.issuer}/**")  # sent to the provider's sign-in
    await page.locator("input[name=login]").fill("alice")
    await page.locator("input[name=password]").fill("any")
    await page.locator("button[type=submit]").click()
    await page.locator("button[type=submit]").click()  # the consent screen
    await page.wait_for_url(f"{url}/**")
    await wait_status(page, "ready")
    await expect(page.get_by_test_id("forget-key")).to_have_text("Sign out")
    stored = await page.evaluate("JSON.parse(sessionStorage.getItem('chatgate.token'))")
    assert stored["access"].count(".") == 2 and stored["refresh"]
    assert "code=" not in page.url

    await send(page, "hello from alice")
    await expect(assistants(page).nth(0)).to_contain_text("Last user message: hello from alice")
    await wait_status(page, "ready")

    alice = {"authorization": f"Bearer {provider.token('alice')}"}  # the same person, another token
    bob = {"authorization": f"Bearer {provider.token('bob')}"}
    assert len(httpx.get(f"{url}/agents/bot/threads", headers=alice).json()["threads"]) == 1
    assert httpx.get(f"{url}/agents/bot/threads", headers=bob).json()["threads"] == []

    # An expired token is refreshed with the refresh token, not asked for again.
    await page.evaluate(
        "(() => { const t = JSON.parse(sessionStorage.getItem('chatgate.token')); t.expires = 0;"
        " sessionStorage.setItem('chatgate.token', JSON.stringify(t)); })()"
    )
    await send(page, "still me")
    await expect(assistants(page).nth(1)).to_contain_text("Last user message: still me")
    renewed = await page.evaluate("JSON.parse(sessionStorage.getItem('chatgate.token'))")
    assert renewed["access"] != stored["access"] and renewed["expires"] > 0


async def test_the_page_learns_its_client_and_may_reach_the_issuer(signed_in_site: tuple[str, OpenIDProvider]) -> None:
    url, _ = signed_in_site
    settings = httpx.get(f"{url}/sign-in.json").json()
    assert settings["client_id"] == "page"
    assert "connect-src 'self' http://127.0.0.1:" in httpx.get(f"{url}/").headers["content-security-policy"]

"""The useChat browser app on its own origin signs its user in with a real OpenID provider, then chats.

The app (tests/clients/usechat, src/sign_in.js) runs the authorization code flow with PKCE itself: it
sends Chromium to the provider's authorize endpoint (npm ``oidc-provider`` on loopback, tests/oidc), the
person logs in on the provider's development login and consent screens, comes back with a code, and the
app trades it for an access token at the token endpoint, from the browser. useChat then sends that token
as ``Authorization: Bearer`` through its transport's ``headers``, cross-origin (CORS). The provider's
public client ``page`` is the chat page's (tests/e2e/test_chat_page_sign_in.py), with the app's address as one
more redirect URI; the app takes the same settings chatgate's ``GET /sign-in.json`` gives the page.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from urllib.parse import urlencode

import httpx
import pytest
from playwright.async_api import Browser, Page, expect

from chatgate.config import Config
from tests.browser import recorded_page
from tests.conftest import make_config
from tests.oidc_provider import OpenIDProvider, running_oidc_provider
from tests.usechat_app import TIMEOUT_MS, send, wait_ready

Serve = Callable[[Config], str]

pytestmark = pytest.mark.asyncio(loop_scope="module")

APP_PATH = "/ai6/index.html"


@pytest.fixture(scope="module")
def provider(app_origin: str) -> Iterator[OpenIDProvider]:
    """The provider, with the app's address among the redirect URIs of its public client ``page``."""
    with running_oidc_provider(page_redirects=(f"{app_origin}{APP_PATH}",)) as provider:
        yield provider


@asynccontextmanager
async def signed_in(
    browser: Browser, app_origin: str, provider: OpenIDProvider, person: str, **query: str
) -> AsyncIterator[Page]:
    """Open the app as a new visitor; it sends them to the provider, where ``person`` logs in and consents."""
    async with recorded_page(browser, f"usechat-sign-in-{person}", 900, 600) as page:
        page.set_default_timeout(TIMEOUT_MS)
        await page.goto(f"{app_origin}{APP_PATH}?{urlencode(query)}")
        await page.wait_for_url(f"{provider.issuer}/**")  # the app sent the browser to sign in
        await page.locator("input[name=login]").fill(person)
        await page.locator("input[name=password]").fill("any")
        await page.locator("button[type=submit]").click()
        await page.locator("button[type=submit]").click()  # the consent screen
        await expect(page.get_by_test_id("user")).to_have_text(person)  # back, with a token naming them
        assert page.url == f"{app_origin}{APP_PATH}?{urlencode(query)}"  # the code left, the app's query is back
        yield page


async def token_of(page: Page) -> str:
    """The access token the app keeps in its tab."""
    return str(await page.evaluate("JSON.parse(sessionStorage.getItem('usechat.token')).access"))


async def test_the_app_signs_its_user_in_and_their_thread_and_usage_are_theirs(
    browser: Browser, serve: Serve, app_origin: str, provider: OpenIDProvider, tmp_path: Path
) -> None:
    agent = {"model": "builtin:echo", "vercel_ai_version": "v6", "conversations": "server"}
    jwt = {
        "issuer": provider.issuer,
        "audience": "chatgate",
        "page_client_id": "page",
        "page_params": {"scope": "openid", "resource": "urn:chatgate", "prompt": "consent"},
    }
    database = tmp_path / "t.db"
    config = make_config(
        {"shop": agent},
        server={"cors_origins": [app_origin]},
        store={"url": f"sqlite:///{database}"},
        auth={"jwt": jwt},
    )
    base = serve(config)
    settings = json.dumps(httpx.get(f"{base}/sign-in.json").json())  # the chat page's sign-in settings
    query = {"base": base, "agent": "shop", "thread": "t-mine", "sign_in": settings}
    thread = f"{base}/agents/shop/threads/t-mine/messages"
    alice_person = f"{provider.issuer}#alice"

    async with signed_in(browser, app_origin, provider, "alice", **query) as page:
        await send(page, "hello from alice")
        text = page.locator("[data-testid=message][data-role=assistant] [data-testid=part-text]")
        await expect(text).to_contain_text("Last user message: hello from alice")
        await wait_ready(page)
        await expect(page.get_by_test_id("error")).to_have_count(0)
        alice = {"authorization": f"Bearer {await token_of(page)}"}

    assert [m["role"] for m in httpx.get(thread, headers=alice).json()["messages"]] == ["user", "assistant"]
    with sqlite3.connect(database) as db:
        assert db.execute("SELECT id, owner FROM threads").fetchall() == [("t-mine", f"person:{alice_person}")]
    mine = httpx.get(f"{base}/usage/me", params={"group_by": "person,agent"}, headers=alice).json()["rows"]
    assert [(row["person"], row["agent"], row["runs"], row["model_calls"]) for row in mine] == [
        (alice_person, "shop", 1, 1)
    ]
    assert mine[0]["input_tokens"] > 0 and mine[0]["output_tokens"] > 0

    # Bob signs in on the same app and opens the same thread id: none of alice's messages, and her
    # thread is not his to read.
    async with signed_in(browser, app_origin, provider, "bob", **query) as page:
        await expect(page.locator("[data-testid=message]")).to_have_count(0)
        bob = {"authorization": f"Bearer {await token_of(page)}"}
    assert httpx.get(thread, headers=bob).status_code == 404
    assert httpx.get(f"{base}/agents/shop/threads", headers=bob).json()["threads"] == []
    assert httpx.get(f"{base}/usage/me", headers=bob).json()["rows"] == []
    assert len(httpx.get(thread, headers=alice).json()["messages"]) == 2

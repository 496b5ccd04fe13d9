"""chatgate's own chat page (``GET /``) in headless Chromium against a live server, as a user uses it.

The page is a real useChat client (the ``ai`` 6 chat class, bundled). Each test clicks and types,
reads what the page shows, and saves its last step as tests/artifacts/page-<test>.png.
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator, Callable

import pytest
import pytest_asyncio
from playwright.async_api import Browser, Page, expect

from chatgate.config import Config
from tests.chat_page import assistants, chromium, open_page, screenshot, send, wait_status
from tests.conftest import make_config

Serve = Callable[[Config], str]

pytestmark = pytest.mark.asyncio(loop_scope="module")


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def browser() -> AsyncIterator[Browser]:
    async with chromium() as browser:
        yield browser


@pytest_asyncio.fixture(loop_scope="module")
async def page(browser: Browser, request: pytest.FixtureRequest) -> AsyncIterator[Page]:
    """A fresh page in its own context; its final state is saved as tests/artifacts/page-<test>.png."""
    context = await browser.new_context(viewport={"width": 1000, "height": 760})
    page = await context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    try:
        yield page
    finally:
        await screenshot(page, "page-" + re.sub(r"[^A-Za-z0-9_.-]+", "-", request.node.name).strip("-"))
        await context.close()
    assert errors == [], f"the page threw: {errors}"


def agents() -> Config:
    echo = {"model": "builtin:echo"}
    return make_config(
        {
            "shop": {
                **echo,
                "default": True,
                "description": "Echoes; can call pick_color in the browser and add on the server.",
                "client_tools": {
                    "pick_color": {
                        "description": "Ask the user to pick a colour.",
                        "parameters": {"type": "object", "properties": {"palette": {"type": "string"}}},
                    }
                },
                "tools": {"add": {"function": "tests.sample_tools:add", "requires_approval": True}},
            },
            "open": {**echo, "manage_system_prompt": "client", "system_prompt": "Default prompt."},
            "thinker": {**echo, "model_settings": {"reasoning": True}},
            "slow": {**echo, "model_settings": {"delay": 0.2}},
            "broken": {**echo, "model_settings": {"fail_after": 3}},
        },
        server={"approval_secret": "a-secret-of-enough-length"},
    )


async def test_the_page_lists_the_agents_and_a_turn_streams(page: Page, serve: Serve) -> None:
    await open_page(page, serve(agents()))
    options = page.get_by_label("Agent", exact=True).locator("option")
    await expect(options).to_have_text(["shop", "open", "thinker", "slow", "broken"])
    await expect(page.get_by_label("Agent", exact=True)).to_have_value("shop")
    await expect(page.get_by_test_id("policy")).to_contain_text("set by the server")
    await send(page, "hello there")
    await expect(assistants(page).nth(0)).to_contain_text("Last user message: hello there")
    await wait_status(page, "ready")
    await send(page, "and again")
    await expect(assistants(page).nth(1)).to_contain_text("Last user message: and again")
    await wait_status(page, "ready")
    await expect(page.locator("[data-testid=message][data-role=user]")).to_have_count(2)
    await expect(page.get_by_test_id("error")).to_be_hidden()

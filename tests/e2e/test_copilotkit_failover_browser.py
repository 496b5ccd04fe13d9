"""A model failing mid-answer in a real CopilotKit app (``CopilotChat`` on ``@copilotkit/runtime``) in Chromium.

The first model shows "Hal" and is held there until the page renders it, then its stream is cut; the
fallback answers. chatgate's ``MESSAGES_SNAPSHOT`` drops the partial message: the page ends with one answer.
"""

from __future__ import annotations

import threading
from collections.abc import AsyncIterator, Callable

import pytest
import pytest_asyncio
from playwright.async_api import Browser, Page, expect

from chatgate.config import Config
from tests.browser import recorded_page
from tests.conftest import make_config
from tests.copilotkit_app import build_copilotkit_app, copilotkit_runtime
from tests.e2e.test_copilotkit_browser import TIMEOUT_MS, assistant, send
from tests.providers.fakes import Reply, fake_in_thread, openai_chunk
from tests.providers.support import provider_table
from tests.providers.test_ui_clients import openai_text

Serve = Callable[[Config], str]

pytestmark = pytest.mark.asyncio(loop_scope="module")


@pytest_asyncio.fixture(loop_scope="module")
async def page(browser: Browser, request: pytest.FixtureRequest) -> AsyncIterator[Page]:
    """A page; its final state is saved as tests/artifacts/copilotkit-<test>.png."""
    build_copilotkit_app()
    async with recorded_page(browser, f"copilotkit-{request.node.name}", 900, 800) as page:
        page.set_default_timeout(TIMEOUT_MS)
        yield page


async def test_the_partial_answer_is_replaced_by_the_fallbacks(page: Page, serve: Serve) -> None:
    shown = threading.Event()  # holds the first model after "Hal" until the page shows it
    cut = Reply([openai_chunk({"content": "Hal"}), shown], ending="cut")
    with fake_in_thread(cut) as dead, fake_in_thread(openai_text("Hello", " there")) as live:
        providers = {"up0": provider_table("openai", dead.url), "up1": provider_table("openai", live.url)}
        config = make_config({"shop": {"model": "up0:m0", "fallbacks": ["up1:m1"]}}, providers=providers)
        with copilotkit_runtime(serve(config) + "/agents/shop/ag-ui") as url:
            await page.goto(url, wait_until="networkidle")
            await page.get_by_test_id("copilot-chat-textarea").wait_for()
            try:
                await send(page, "Hi")
                await expect(assistant(page).last).to_contain_text("Hal")  # the person saw the partial answer
            finally:
                shown.set()
            await expect(assistant(page)).to_have_count(1)
            await expect(assistant(page).last).to_have_text("Hello there")
        assert len(live.requests) == 1

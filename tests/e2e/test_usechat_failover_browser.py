"""A model failing mid-answer, as a person sees it in the real useChat app (ai 6 and 7) in headless Chromium.

The first model shows "Hal" and is held there until the page renders it, then its stream is cut. On ai 7
the partial answer disappears and the fallback's answer takes its place: one answer on the page. On ai 6,
which cannot drop a part, the partial answer stays with the error, as without fallbacks.
"""

from __future__ import annotations

import threading
from collections.abc import AsyncIterator, Callable
from pathlib import Path

import pytest
import pytest_asyncio
from playwright.async_api import Browser, Page, expect

from chatgate.config import Config
from tests.browser import recorded_page
from tests.conftest import make_config
from tests.providers.fakes import Reply, fake_in_thread, openai_chunk
from tests.providers.support import provider_table
from tests.providers.test_ui_clients import openai_text
from tests.usechat_app import build_usechat_app, open_usechat, send, wait_ready

Serve = Callable[[Config], str]

pytestmark = pytest.mark.asyncio(loop_scope="module")


@pytest.fixture(scope="session")
def usechat_dist() -> Path:
    return build_usechat_app()


@pytest_asyncio.fixture(loop_scope="module")
async def page(browser: Browser, request: pytest.FixtureRequest) -> AsyncIterator[Page]:
    """A fresh page in its own context; its final state is saved as tests/artifacts/usechat-<test>.png."""
    async with recorded_page(browser, f"usechat-{request.node.name}", 900, 700) as page:
        yield page


@pytest.mark.parametrize("major", [6, 7], ids=lambda m: f"ai{m}")
async def test_a_model_failing_mid_answer(page: Page, serve: Serve, usechat_dist: Path, major: int) -> None:
    shown = threading.Event()  # holds the first model after "Hal" until the page shows it
    dead_reply = Reply([openai_chunk({"content": "Hal"}), shown], ending="cut")
    with fake_in_thread(dead_reply) as dead, fake_in_thread(openai_text("Hello", " there")) as live:
        providers = {"up0": provider_table("openai", dead.url), "up1": provider_table("openai", live.url)}
        agent = {"model": "up0:m0", "fallbacks": ["up1:m1"], "vercel_ai_version": f"v{major}"}
        base = serve(make_config({"bot": agent}, providers=providers))
        await open_usechat(page, usechat_dist, base, "bot", major)
        answers = page.locator("[data-testid=message][data-role=assistant] [data-testid=part-text]")
        try:
            await send(page, "Hi")
            await expect(answers).to_have_text(["Hal"])  # the person saw the partial answer
        finally:
            shown.set()
        if major == 7:
            await expect(answers).to_have_text(["Hello there"])  # exactly one answer: the replacement
            await wait_ready(page)
            await expect(page.get_by_test_id("error")).to_have_count(0)
            assert len(live.requests) == 1
        else:
            await expect(page.get_by_test_id("error")).to_have_text("The model stream was interrupted.")
            await expect(answers).to_have_text(["Hal"])
            assert live.requests == []
    await expect(page.locator("[data-testid=message][data-role=assistant]")).to_have_count(1)

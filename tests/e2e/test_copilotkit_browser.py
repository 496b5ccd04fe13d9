"""A real CopilotKit app in headless Chromium: ``CopilotChat`` on ``@copilotkit/runtime``, whose
``HttpAgent`` talks to a live chatgate's AG-UI route.

Each test saves a screenshot of its last step in tests/artifacts/.
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator, Callable, Iterator

import pytest
import pytest_asyncio
from playwright.async_api import Browser, Locator, Page, expect

from chatgate.config import Config
from tests.browser import recorded_page
from tests.conftest import make_config
from tests.copilotkit_app import build_copilotkit_app, copilotkit_runtime

Serve = Callable[[Config], str]
TIMEOUT_MS = 20_000
SEND_ATTEMPTS = 4

pytestmark = pytest.mark.asyncio(loop_scope="module")


@pytest.fixture(scope="module")
def built() -> None:
    build_copilotkit_app()


@pytest.fixture
def app_url(serve: Serve, built: None) -> Iterator[str]:
    """chatgate with one builtin:echo agent (a server tool that needs approval), behind the runtime."""
    add = {"function": "tests.sample_tools:add", "requires_approval": True}
    agent = {"model": "builtin:echo", "tools": {"add": add}}
    config = make_config({"shop": agent}, server={"approval_secret": "a-secret-of-enough-length"})
    with copilotkit_runtime(serve(config) + "/agents/shop/ag-ui") as url:
        yield url


@pytest_asyncio.fixture(loop_scope="module")
async def page(browser: Browser, request: pytest.FixtureRequest, app_url: str) -> AsyncIterator[Page]:
    """The app, loaded; its final state is saved as tests/artifacts/copilotkit-<test>.png."""
    async with recorded_page(browser, f"copilotkit-{request.node.name}", 900, 800) as page:
        page.set_default_timeout(TIMEOUT_MS)
        await page.goto(app_url, wait_until="networkidle")  # the runtime probed: sends are not dropped
        await page.get_by_test_id("copilot-chat-textarea").wait_for()
        yield page


async def send(page: Page, text: str) -> None:
    """Type ``text`` and press Enter until the chat takes it.

    CopilotChat can re-render its input while the runtime connects, dropping an Enter pressed in that
    moment and keeping the text; a taken message empties the box, so pressing again never sends twice.
    """
    box = page.get_by_test_id("copilot-chat-textarea")
    await box.fill(text)
    for _ in range(SEND_ATTEMPTS):
        await box.press("Enter")
        try:
            await expect(box).to_have_value("", timeout=TIMEOUT_MS // SEND_ATTEMPTS)
            return
        except AssertionError:
            continue
    await expect(box).to_have_value("")


def assistant(page: Page) -> Locator:
    return page.get_by_test_id("copilot-assistant-message")


async def test_a_turn(page: Page) -> None:
    await send(page, "hello there")
    await expect(page.get_by_test_id("copilot-user-message")).to_contain_text("hello there")
    await expect(assistant(page).last).to_contain_text("Last user message: hello there", timeout=TIMEOUT_MS)


async def test_a_frontend_tool(page: Page) -> None:
    await send(page, '/call pick_color {"palette": "warm"}')
    answer = re.compile(r"Tool results: \S+ returned: red")
    await expect(assistant(page).last).to_contain_text(answer, timeout=TIMEOUT_MS)


async def test_an_approval_interrupt_approved(page: Page) -> None:
    await send(page, '/call add {"a": 2, "b": 3}')
    await expect(page.get_by_test_id("interrupt-message")).to_have_text("Approve the call to add?")
    await page.get_by_test_id("approve").click()
    answer = re.compile(r"Tool results: \S+ returned: 5")
    await expect(assistant(page).last).to_contain_text(answer, timeout=TIMEOUT_MS)
    await expect(page.get_by_test_id("interrupt")).to_have_count(0)


async def test_an_approval_interrupt_denied(page: Page) -> None:
    await send(page, '/call add {"a": 2, "b": 3}')
    await page.get_by_test_id("deny").click()
    await expect(assistant(page).last).to_contain_text("The user denied this tool call", timeout=TIMEOUT_MS)

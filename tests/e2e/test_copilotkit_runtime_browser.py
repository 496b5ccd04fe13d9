"""CopilotKit with no Node process: the same React app in headless Chromium, its ``runtimeUrl`` on chatgate.

The page is the build of tests/clients/copilotkit served from a second origin (tests/static_site.py), its
``CopilotKitProvider`` pointed at chatgate's ``[copilotkit] path`` through CORS; nothing else runs
between the browser and chatgate. Each test saves a screenshot of its last step in tests/artifacts/.
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager
from pathlib import Path

import httpx
import pytest
import pytest_asyncio
from playwright.async_api import Browser, Page, expect

from chatgate.config import Config
from tests.browser import recorded_page
from tests.conftest import make_config
from tests.copilotkit_app import APP_DIR
from tests.e2e.test_copilotkit_browser import (
    TIMEOUT_MS,
    assistant,
    built,
    send,
    test_a_frontend_tool,
    test_an_approval_interrupt_approved,
    test_an_approval_interrupt_denied,
)
from tests.static_site import static_site

# The Node-runtime module's tests of tools and approvals, run here again on this module's page.
__all__ = ["built", "test_a_frontend_tool", "test_an_approval_interrupt_approved", "test_an_approval_interrupt_denied"]

Serve = Callable[[Config], str]
BASE = "/copilotkit"
WORDS = 60

pytestmark = pytest.mark.asyncio(loop_scope="module")


@pytest.fixture
def chatgate_url(serve: Serve, built: None, tmp_path: Path) -> Iterator[tuple[str, str]]:
    """The page's origin and chatgate's URL: a stored-thread echo agent answering a word every 50 ms, with a
    server tool that needs approval; it is the default agent, which CopilotKit's id ``default`` names."""
    with static_site(APP_DIR / "dist") as origin:
        add = {"function": "tests.sample_tools:add", "requires_approval": True}
        agent = {"model": "builtin:echo", "conversations": "server", "model_settings": {"delay": 0.05}}
        config = make_config(
            {"shop": {**agent, "tools": {"add": add}, "default": True}},  # CopilotKit's "default" id
            server={"cors_origins": [origin], "approval_secret": "a-secret-of-enough-length"},
            store={"url": f"sqlite:///{tmp_path / 'threads.db'}"},
            copilotkit={"path": BASE},
        )
        yield origin, serve(config)


@pytest_asyncio.fixture(loop_scope="module")
async def page(browser: Browser, request: pytest.FixtureRequest, chatgate_url: tuple[str, str]) -> AsyncIterator[Page]:
    """The app with ``runtimeUrl`` on chatgate, loaded; saved as tests/artifacts/copilotkit-runtime-<test>.png."""
    origin, url = chatgate_url
    async with recorded_page(browser, f"copilotkit-runtime-{request.node.name}", 900, 800) as page:
        page.set_default_timeout(TIMEOUT_MS)
        await page.goto(f"{origin}/index.html?runtime={url}{BASE}", wait_until="networkidle")
        await page.get_by_test_id("copilot-chat-textarea").wait_for()
        yield page


@asynccontextmanager
async def _watched(browser: Browser, chatgate_url: tuple[str, str], flag: str) -> AsyncIterator[tuple[Page, list[str]]]:
    """The app with ``?{flag}=1``, recorded as copilotkit-runtime-{flag}, and every request it makes, in order."""
    origin, url = chatgate_url
    paths: list[str] = []
    async with recorded_page(browser, f"copilotkit-runtime-{flag}", 900, 800) as page:
        page.set_default_timeout(TIMEOUT_MS)
        page.on("request", lambda request: paths.append(request.method + " " + request.url))
        await page.goto(f"{origin}/index.html?runtime={url}{BASE}&{flag}=1", wait_until="networkidle")
        yield page, paths


async def _answered(page: Page, text: str) -> None:
    """Send ``text`` and wait for the echo's answer to it."""
    await send(page, text)
    await expect(assistant(page).last).to_contain_text(f"Last user message: {text}", timeout=TIMEOUT_MS)


async def test_a_turn_streams_from_chatgate_alone(page: Page, chatgate_url: tuple[str, str]) -> None:
    await send(page, "hello there")
    await expect(page.get_by_test_id("copilot-user-message")).to_contain_text("hello there")
    await expect(assistant(page).last).to_contain_text("Last user message: hello there", timeout=TIMEOUT_MS)
    threads = httpx.get(f"{chatgate_url[1]}/agents/shop/threads", timeout=30).json()["threads"]
    assert len(threads) == 1  # the turn went to chatgate's store, on CopilotKit's thread id


async def test_stop_ends_the_answer_and_saves_it_partial(page: Page, chatgate_url: tuple[str, str]) -> None:
    url = chatgate_url[1]
    words = " ".join(f"w{n}" for n in range(WORDS))
    await send(page, words)
    await expect(assistant(page).last).to_contain_text("Last user message: w0", timeout=TIMEOUT_MS)
    await page.get_by_test_id("copilot-send-button").click()  # while running, the send button stops
    thread = httpx.get(f"{url}/agents/shop/threads", timeout=30).json()["threads"][0]["id"]

    def answer() -> dict[str, object]:
        return dict(httpx.get(f"{url}/agents/shop/threads/{thread}/messages", timeout=30).json()["messages"][-1])

    for _ in range(TIMEOUT_MS // 100):
        if not httpx.get(f"{url}/agents/shop/threads/{thread}", timeout=30).json()["running"]:
            break
        await page.wait_for_timeout(100)
    saved = answer()
    assert saved["metadata"]["chatgate"]["status"] == "partial"  # type: ignore[index]
    assert f"w{WORDS - 1}" not in str(saved)
    shown = await assistant(page).last.inner_text()
    assert f"w{WORDS - 1}" not in shown and re.search(r"w\d+", shown)


async def test_a_reload_mid_answer_reconnects_and_shows_the_rest_once(
    browser: Browser, chatgate_url: tuple[str, str]
) -> None:
    origin, url = chatgate_url
    words = " ".join(f"w{n}" for n in range(WORDS))
    async with recorded_page(browser, "copilotkit-runtime-reload", 900, 800) as page:
        page.set_default_timeout(TIMEOUT_MS)
        await page.goto(f"{origin}/index.html?runtime={url}{BASE}&thread=t-reload", wait_until="networkidle")
        await send(page, words)
        await expect(assistant(page).last).to_contain_text("Last user message: w0", timeout=TIMEOUT_MS)
        assert httpx.get(f"{url}/agents/shop/threads/t-reload", timeout=30).json()["running"]
        await page.reload(wait_until="domcontentloaded")  # mid-answer: the run goes on in chatgate
        whole = f"Last user message: {words}"
        await expect(assistant(page).last).to_contain_text(whole, timeout=TIMEOUT_MS)
        await expect(assistant(page)).to_have_count(1)
        await expect(page.get_by_test_id("copilot-user-message")).to_have_count(1)
        assert (await assistant(page).last.inner_text()).count(f"w{WORDS - 1}") == 1
    stored = httpx.get(f"{url}/agents/shop/threads/t-reload/messages", timeout=30).json()["messages"]
    assert [m["role"] for m in stored] == ["user", "assistant"]
    assert stored[1]["parts"][-1]["text"].endswith(f"w{WORDS - 1}")  # whole: the reload did not stop it


async def test_the_single_route_transport_streams_a_turn_and_stops(
    browser: Browser, chatgate_url: tuple[str, str]
) -> None:
    """``useSingleEndpoint``, the single-route transport: every call one ``POST {base}`` envelope."""
    url = chatgate_url[1]
    async with _watched(browser, chatgate_url, "single") as (page, paths):
        await _answered(page, "hello there")
        words = " ".join(f"w{n}" for n in range(WORDS))
        await send(page, words)
        await expect(assistant(page).last).to_contain_text("Last user message: w0", timeout=TIMEOUT_MS)
        await page.get_by_test_id("copilot-send-button").click()
        thread = httpx.get(f"{url}/agents/shop/threads", timeout=30).json()["threads"][0]["id"]
        for _ in range(TIMEOUT_MS // 100):
            if not httpx.get(f"{url}/agents/shop/threads/{thread}", timeout=30).json()["running"]:
                break
            await page.wait_for_timeout(100)
    stored = httpx.get(f"{url}/agents/shop/threads/{thread}/messages", timeout=30).json()["messages"]
    assert stored[-1]["metadata"]["chatgate"]["status"] == "partial"
    to_chatgate = {path for path in paths if path.split(" ", 1)[1].startswith(url)}
    assert to_chatgate == {f"POST {url}{BASE}"}  # nothing but envelopes: no multi-route path was used


async def test_the_v1_copilotkit_provider_does_a_turn(browser: Browser, chatgate_url: tuple[str, str]) -> None:
    """The v1 ``<CopilotKit>`` component (``@copilotkit/react-core``'s main entry) in place of the v2 provider."""
    url = chatgate_url[1]
    async with _watched(browser, chatgate_url, "v1") as (page, paths):
        await _answered(page, "hello from v1")
    threads = httpx.get(f"{url}/agents/shop/threads", timeout=30).json()["threads"]
    assert [t["title"] for t in threads] == ["hello from v1"]
    assert f"POST {url}{BASE}/agent/default/run" in paths  # it negotiated the multi-route transport via /info

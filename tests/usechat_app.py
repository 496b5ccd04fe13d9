"""The useChat test app (tests/clients/usechat), built per ``ai`` major and opened in Chromium.

``built_usechat_app`` builds it with Vite when its sources changed (a no-op otherwise). The app is
served to the browser from chatgate's own origin: Playwright answers ``{base}/__usechat/aiN/...``
from the build folder, and every other request (the chat stream) goes to the live server for real.
``open_usechat_from`` opens it from a second origin instead (tests/static_site.py), which needs
chatgate's CORS support.
"""

from __future__ import annotations

import mimetypes
import subprocess
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from urllib.parse import urlencode

import pytest
from playwright.async_api import Browser, Page, Route, async_playwright

from tests.browser import ARTIFACTS_DIR, CHROMIUM_ARGS, chromium_path

APP_DIR = Path(__file__).parent / "clients" / "usechat"
APP_PREFIX = "/__usechat"
TIMEOUT_MS = 15_000


def build_usechat_app() -> Path:
    """Build the app for ai 5, 6 and 7 (skipped when unchanged); returns the folder holding ``aiN/``."""
    if not (APP_DIR / "node_modules").is_dir():
        pytest.fail("tests/clients/usechat/node_modules is missing: run scripts/test.sh, which installs and builds it")
    completed = subprocess.run(
        ["node", str(APP_DIR / "build.mjs")], capture_output=True, text=True, timeout=120, check=False
    )
    if completed.returncode != 0:
        pytest.fail(f"building the useChat app failed:\n{completed.stderr}\n{completed.stdout}")
    return APP_DIR / "dist"


@asynccontextmanager
async def chromium() -> AsyncIterator[Browser]:
    """Headless system Chromium, closed on exit."""
    async with async_playwright() as playwright:
        browser = await playwright.chromium.launch(executable_path=chromium_path(), args=CHROMIUM_ARGS)
        try:
            yield browser
        finally:
            await browser.close()


async def open_usechat(page: Page, dist: Path, base_url: str, agent: str, major: int, **query: str) -> None:
    """Open the ai ``major`` build of the app on ``base_url``'s origin, chatting with ``agent``.

    ``query`` adds the app's other options (key, thread: see tests/clients/usechat/src/main.jsx).
    """
    root = (dist / f"ai{major}").resolve()
    prefix = f"{base_url}{APP_PREFIX}/ai{major}/"

    async def serve_file(route: Route) -> None:
        relative = route.request.url.removeprefix(prefix).split("?", 1)[0] or "index.html"
        path = (root / relative).resolve()
        if not path.is_relative_to(root) or not path.is_file():
            await route.fulfill(status=404, body="not found")
            return
        content_type = mimetypes.guess_type(path.name)[0] or "application/octet-stream"
        await route.fulfill(status=200, body=path.read_bytes(), content_type=content_type)

    await page.route(f"{prefix}**", serve_file)
    page.set_default_timeout(TIMEOUT_MS)
    await page.goto(f"{prefix}index.html?{urlencode({'agent': agent, **query})}")
    await page.get_by_test_id("ai-major").wait_for()


async def open_usechat_from(page: Page, app_origin: str, major: int, base_url: str, **query: str) -> None:
    """Open the ai ``major`` build served at ``app_origin`` (tests/static_site.py), talking to ``base_url``.

    ``query`` adds the app's other options (agent, key, thread: see tests/clients/usechat/src/main.jsx).
    """
    page.set_default_timeout(TIMEOUT_MS)
    await page.goto(f"{app_origin}/ai{major}/index.html?{urlencode({'base': base_url, **query})}")
    await page.get_by_test_id("ai-major").wait_for()


async def send(page: Page, text: str) -> None:
    """Type ``text`` and press the send button."""
    await page.get_by_test_id("input").fill(text)
    await page.get_by_test_id("send").click()


async def wait_ready(page: Page) -> None:
    """Wait until the chat is idle again (status ``ready``)."""
    await page.wait_for_function(
        "document.querySelector('[data-testid=status]')?.textContent === 'ready'", timeout=TIMEOUT_MS
    )


async def screenshot(page: Page, name: str) -> Path:
    """Save the page as ``tests/artifacts/NAME.png``, the record of a test's last step."""
    ARTIFACTS_DIR.mkdir(exist_ok=True)
    path = ARTIFACTS_DIR / f"{name}.png"
    await page.screenshot(path=str(path), full_page=True)
    return path

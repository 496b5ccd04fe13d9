"""The useChat test app (tests/clients/usechat), built per ``ai`` major and opened in Chromium.

``built_usechat_app`` builds it with Vite when its sources changed (a no-op otherwise). The app is
served to the browser from chatgate's own origin: Playwright answers ``{base}/__usechat/aiN/...``
from the build folder, and every other request (the chat stream) goes to the live server for real.
Serving it from a second origin needs chatgate's CORS support.
"""

from __future__ import annotations

import mimetypes
from pathlib import Path

from playwright.async_api import Page, Route

from tests.browser import build_app

APP_DIR = Path(__file__).parent / "clients" / "usechat"
APP_PREFIX = "/__usechat"
TIMEOUT_MS = 15_000


def build_usechat_app() -> Path:
    """Build the app for ai 5, 6 and 7 (skipped when unchanged); returns the folder holding ``aiN/``."""
    build_app(APP_DIR, "useChat", timeout=120)
    return APP_DIR / "dist"


async def open_usechat(page: Page, dist: Path, base_url: str, agent: str, major: int) -> None:
    """Open the ai ``major`` build of the app on ``base_url``'s origin, chatting with ``agent``."""
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
    await page.goto(f"{prefix}index.html?agent={agent}")
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

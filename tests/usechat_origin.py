"""The useChat test app opened from its own origin, as a real app on its own domain would be.

tests/static_site.py serves the built app (tests/clients/usechat/dist) on a second loopback port, so
every request to chatgate is cross-origin and goes through CORS (``[server] cors_origins``).
"""

from __future__ import annotations

from urllib.parse import urlencode

from playwright.async_api import Page

from tests.usechat_app import TIMEOUT_MS

__all__ = ["open_usechat_from"]


async def open_usechat_from(page: Page, app_origin: str, major: int, base_url: str, **query: str) -> None:
    """Open the ai ``major`` build served at ``app_origin``, talking to chatgate at ``base_url``.

    ``query`` adds the app's other options (agent, key, thread, sign_in: see tests/clients/usechat/src/main.jsx).
    """
    page.set_default_timeout(TIMEOUT_MS)
    await page.goto(f"{app_origin}/ai{major}/index.html?{urlencode({'base': base_url, **query})}")
    await page.get_by_test_id("ai-major").wait_for()

"""The browser the UI tests drive is real: Debian's Chromium under Playwright renders a page."""

from playwright.async_api import async_playwright

from tests.browser import CHROMIUM_ARGS, chromium_path


async def test_chromium_renders_a_page() -> None:
    async with async_playwright() as playwright:
        browser = await playwright.chromium.launch(executable_path=chromium_path(), args=CHROMIUM_ARGS)
        try:
            page = await browser.new_page()
            await page.set_content("<h1>chatgate</h1>")
            assert await page.inner_text("h1") == "chatgate"
        finally:
            await browser.close()

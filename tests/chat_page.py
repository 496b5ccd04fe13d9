"""Driving chatgate's own chat page (``GET /``) in Chromium: one browser per module, helpers per step."""

from __future__ import annotations

from pathlib import Path

from playwright.async_api import Locator, Page

TIMEOUT_MS = 15_000


async def open_page(page: Page, base_url: str, hash_: str = "") -> None:
    """Open the chat page and wait until it is ready to chat."""
    page.set_default_timeout(TIMEOUT_MS)
    await page.goto(f"{base_url}/{hash_}")
    await wait_status(page, "ready")


async def send(page: Page, text: str) -> None:
    """Type ``text`` and press the Send button."""
    await page.get_by_label("Message", exact=True).fill(text)
    await page.get_by_role("button", name="Send", exact=True).click()


async def wait_status(page: Page, status: str) -> None:
    """Wait until the chat's status reads ``status``."""
    await page.wait_for_function(
        "s => document.querySelector('[data-testid=status]')?.textContent === s", arg=status, timeout=TIMEOUT_MS
    )


def assistants(page: Page) -> Locator:
    """The assistant's messages."""
    return page.locator("[data-testid=message][data-role=assistant]")


AXE_SCRIPT = Path(__file__).parent / "clients" / "page" / "node_modules" / "axe-core" / "axe.min.js"


async def axe_violations(page: Page) -> list[dict[str, object]]:
    """axe-core's serious and critical violations on the page as it is now (needs a context with bypass_csp)."""
    if not AXE_SCRIPT.is_file():
        raise RuntimeError("axe-core is missing: run scripts/build-page.sh, which installs tests/clients/page")
    await page.add_script_tag(path=str(AXE_SCRIPT))
    found = await page.evaluate(
        """async () => (await axe.run(document)).violations
            .filter(v => v.impact === 'serious' || v.impact === 'critical')
            .map(v => ({id: v.id, impact: v.impact, nodes: v.nodes.map(n => n.html)}))"""
    )
    assert isinstance(found, list)
    return found

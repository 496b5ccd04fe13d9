"""Headless Chromium for browser tests: Debian's package, driven by Playwright with its path set.

Playwright's own browser download is not possible here, so every launch names ``/usr/bin/chromium``
(installed by ``scripts/test-system-packages.sh``) and turns off the background connections a closed
network would refuse.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import pytest
from playwright.async_api import Browser, Page, async_playwright, expect

__all__ = ["ARTIFACTS_DIR", "CHROMIUM_ARGS", "build_app", "chromium", "chromium_path", "recorded_page", "screenshot"]

CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]

EXPECT_TIMEOUT_MS = 20_000
"""How long a browser assertion waits: Playwright's 5 s is short for a page on a loaded 2-core machine."""
expect.set_options(timeout=EXPECT_TIMEOUT_MS)

ARTIFACTS_DIR = Path(__file__).parent / "artifacts"
"""Screenshots of each browser test's last step (ignored by git; CI keeps the folder)."""


def chromium_path() -> str:
    """The system Chromium; a clear failure (never a skip) when it is missing."""
    path = shutil.which("chromium")
    if path is None:
        raise RuntimeError("chromium is not installed: run ./scripts/test.sh, which installs it")
    return path


@asynccontextmanager
async def chromium() -> AsyncIterator[Browser]:
    """Headless system Chromium, closed on exit."""
    async with async_playwright() as playwright:
        browser = await playwright.chromium.launch(executable_path=chromium_path(), args=CHROMIUM_ARGS)
        try:
            yield browser
        finally:
            await browser.close()


async def screenshot(page: Page, name: str) -> Path:
    """Save the page as ``tests/artifacts/NAME.png``, the record of a test's last step."""
    ARTIFACTS_DIR.mkdir(exist_ok=True)
    path = ARTIFACTS_DIR / f"{name}.png"
    await page.screenshot(path=str(path), full_page=True)
    return path


@asynccontextmanager
async def recorded_page(browser: Browser, artifact: str, width: int, height: int) -> AsyncIterator[Page]:
    """A fresh page in its own context; on exit its last state is saved as tests/artifacts/ARTIFACT.png.

    ``artifact`` is usually a prefix and the test's name; characters a file name should not hold become ``-``.
    """
    context = await browser.new_context(viewport={"width": width, "height": height})
    page = await context.new_page()
    try:
        yield page
    finally:
        await screenshot(page, re.sub(r"[^A-Za-z0-9_.-]+", "-", artifact).strip("-"))
        await context.close()


def build_app(app_dir: Path, name: str, timeout: float) -> None:
    """Run ``app_dir``'s ``build.mjs`` (a no-op when its sources are unchanged); a clear failure otherwise."""
    if not (app_dir / "node_modules").is_dir():
        pytest.fail(f"{app_dir}/node_modules is missing: run scripts/test.sh, which installs it")
    completed = subprocess.run(
        ["node", str(app_dir / "build.mjs")], capture_output=True, text=True, timeout=timeout, check=False
    )
    if completed.returncode != 0:
        pytest.fail(f"building the {name} app failed:\n{completed.stderr}\n{completed.stdout}")

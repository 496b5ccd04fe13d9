"""What the browser tests share: one headless Chromium per test module (a launch costs about a second), and the
useChat app served from its own origin."""

from collections.abc import AsyncIterator, Iterator

import pytest
import pytest_asyncio
from playwright.async_api import Browser

from tests.browser import chromium
from tests.static_site import static_site
from tests.usechat_app import build_usechat_app


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def browser() -> AsyncIterator[Browser]:
    """Headless Chromium for the module's tests; each test opens its own context."""
    async with chromium() as browser:
        yield browser


@pytest.fixture(scope="module")
def app_origin() -> Iterator[str]:
    """The built useChat app served from its own origin, ``http://127.0.0.1:PORT``."""
    with static_site(build_usechat_app()) as origin:
        yield origin

"""The chat page served under /llm by chatgate mounted in a FastAPI app: every call it makes stays under
the prefix (docs/embedding.md)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path

import httpx
import pytest
import pytest_asyncio
from fastapi import FastAPI
from playwright.async_api import Browser, Page, expect

from chatgate import create_app
from tests.browser import recorded_page
from tests.chat_page import assistants, open_page, send, wait_status
from tests.conftest import LiveServer, make_config

pytestmark = pytest.mark.asyncio(loop_scope="module")


@pytest.fixture(scope="module")
def mounted(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """chatgate (a server-held agent on SQLite) under /llm of a FastAPI app; the host's base URL."""
    database: Path = tmp_path_factory.mktemp("mounted") / "threads.db"
    agent = {"model": "builtin:echo", "conversations": "server", "default": True}
    chat = create_app(make_config({"kept": agent}, store={"url": f"sqlite:///{database}"}))

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        async with chat.lifespan(app):
            yield

    app = FastAPI(lifespan=lifespan)
    app.mount("/llm", chat)
    server = LiveServer(app)
    server.start()
    yield server.url
    server.stop()


@pytest_asyncio.fixture(loop_scope="module")
async def page(browser: Browser) -> AsyncIterator[Page]:
    async with recorded_page(browser, "page-mounted", 1000, 760) as page:
        yield page


async def test_the_page_chats_and_lists_threads_under_the_prefix(page: Page, mounted: str) -> None:
    requested: list[str] = []
    page.on("request", lambda request: requested.append(request.url))
    await open_page(page, f"{mounted}/llm")
    await send(page, "asked under a prefix")
    await expect(assistants(page).nth(0)).to_contain_text("Last user message: asked under a prefix")
    await wait_status(page, "ready")
    threads = page.get_by_role("navigation", name="Conversations")
    await expect(threads.get_by_role("button", name="asked under a prefix")).to_be_visible()
    outside = [url for url in requested if not url.startswith(f"{mounted}/llm/")]
    assert outside == []
    assert any(url.endswith("/llm/agents/kept/chat") for url in requested)
    (thread,) = httpx.get(f"{mounted}/llm/agents/kept/threads").json()["threads"]
    stored = httpx.get(f"{mounted}/llm/agents/kept/threads/{thread['id']}/messages").json()["messages"]
    assert [message["role"] for message in stored] == ["user", "assistant"]

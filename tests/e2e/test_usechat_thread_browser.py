"""The useChat app on a server-held thread (``?thread=``) in Chromium: a reload restores the chat.

The app is served from its own origin (tests/static_site.py), as a real app is, so loading the thread
and each turn go through CORS.

The app loads ``GET /agents/{agent}/threads/{id}/messages`` into ``useChat({messages})``, sends only
the newest message (``prepareSendMessagesRequest`` -> ``{id, message}``), as docs/conversations.md
describes, and resumes an answer still streaming (``useChat({resume: true})``, docs/resume.md). The
agent's ``builtin:echo`` lists every user message it got (``history``), so the page shows whether the
model saw the whole stored thread.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import httpx
import pytest
import pytest_asyncio
from playwright.async_api import Browser, Page, expect

from chatgate.config import Config
from tests.browser import recorded_page
from tests.conftest import make_config
from tests.usechat_app import send, wait_ready
from tests.usechat_origin import open_usechat_from

Serve = Callable[[Config], str]

pytestmark = pytest.mark.asyncio(loop_scope="module")


@pytest_asyncio.fixture(loop_scope="module")
async def page(browser: Browser, request: pytest.FixtureRequest) -> AsyncIterator[Page]:
    """A fresh page; its final state is saved as tests/artifacts/usechat-thread-<test>.png."""
    async with recorded_page(browser, f"usechat-thread-{request.node.name}", 900, 900) as page:
        yield page


def stored_agent(major: int, store: Path, app_origin: str, **settings: Any) -> Config:
    bot = {
        "model": "builtin:echo",
        "system_prompt": "You are terse.",
        "conversations": "server",
        "vercel_ai_version": f"v{major}",
        "model_settings": {"history": True, **settings},
    }
    return make_config({"bot": bot}, store={"url": f"sqlite:///{store}"}, server={"cors_origins": [app_origin]})


# A message's text without its usage line: usage comes with a live answer's ending, not the stored copy.
_TEXT = "m => [...m.children].filter(c => c.dataset.testid !== 'usage').map(c => c.innerText).join('\\n')"


async def shown(page: Page) -> list[tuple[str | None, str | None, str]]:
    """Each message on the page: (role, id, text)."""
    messages = page.get_by_test_id("message")
    return [
        (await m.get_attribute("data-role"), await m.get_attribute("data-id"), await m.evaluate(_TEXT))
        for m in await messages.all()
    ]


@pytest.mark.parametrize("major", [5, 6, 7], ids=lambda m: f"ai{m}")
async def test_two_turns_a_reload_and_a_third_turn_on_the_stored_thread(
    page: Page, serve: Serve, app_origin: str, tmp_path: Path, major: int
) -> None:
    base = serve(stored_agent(major, tmp_path / "threads.db", app_origin))
    bodies: list[Any] = []
    page.on("request", lambda request: bodies.append(request.post_data_json) if request.method == "POST" else None)
    assistants = page.locator("[data-testid=message][data-role=assistant]")

    await open_usechat_from(page, app_origin, major, base, agent="bot", thread="t1")  # a new thread: GET answers 404
    await send(page, "first")
    await expect(assistants.nth(0)).to_contain_text("User messages: first")
    await wait_ready(page)
    await send(page, "second")
    await expect(assistants.nth(1)).to_contain_text("User messages: first | second")
    await wait_ready(page)
    before = await shown(page)

    await page.reload()
    await expect(page.get_by_test_id("message")).to_have_count(4)
    assert await shown(page) == before  # the same messages, ids and texts, from the server's copy

    await send(page, "third")
    await expect(assistants.nth(2)).to_contain_text("Last user message: third")
    await expect(assistants.nth(2)).to_contain_text("User messages: first | second | third")
    await wait_ready(page)
    await expect(page.get_by_test_id("error")).to_have_count(0)

    # Each request carried the newest message only; the server held the rest.
    assert [(body["id"], body["message"]["role"], "messages" in body) for body in bodies] == [("t1", "user", False)] * 3
    assert [body["message"]["parts"][0]["text"] for body in bodies] == ["first", "second", "third"]
    stored = httpx.get(f"{base}/agents/bot/threads/t1/messages").json()["messages"]
    assert [m["id"] for m in stored[:4]] == [message_id for _, message_id, _ in before]
    assert [m["role"] for m in stored] == ["user", "assistant"] * 3


async def test_a_regenerate_after_a_reload_replaces_the_stored_answer(
    page: Page, serve: Serve, app_origin: str, tmp_path: Path
) -> None:
    base = serve(stored_agent(6, tmp_path / "threads.db", app_origin))
    assistant = page.locator("[data-testid=message][data-role=assistant]")
    await open_usechat_from(page, app_origin, 6, base, agent="bot", thread="t1")
    await send(page, "only once")
    await expect(assistant).to_contain_text("User messages: only once")
    await wait_ready(page)
    first_answer = await assistant.get_attribute("data-id")

    await page.reload()
    await expect(page.get_by_test_id("message")).to_have_count(2)
    await page.get_by_test_id("regenerate").click()
    await expect(assistant).not_to_have_attribute("data-id", first_answer or "")
    await wait_ready(page)
    await expect(assistant).to_contain_text("User messages: only once")  # answered again, not stored twice
    await expect(page.get_by_test_id("error")).to_have_count(0)
    stored = httpx.get(f"{base}/agents/bot/threads/t1/messages").json()["messages"]
    assert [m["role"] for m in stored] == ["user", "assistant"]
    assert stored[1]["id"] == await assistant.get_attribute("data-id")


@pytest.mark.parametrize("major", [5, 6, 7], ids=lambda m: f"ai{m}")
async def test_a_reload_mid_answer_resumes_the_running_stream(
    page: Page, serve: Serve, app_origin: str, tmp_path: Path, major: int
) -> None:
    base = serve(stored_agent(major, tmp_path / "threads.db", app_origin, delay=0.2))
    assistant = page.locator("[data-testid=message][data-role=assistant]")
    resume_url = f"{base}/agents/bot/chat/t1/stream"
    async with page.expect_response(resume_url) as on_load:
        await open_usechat_from(page, app_origin, major, base, agent="bot", thread="t1")
    assert (await on_load.value).status == 204  # nothing running yet: useChat's resume on load finds nothing
    await send(page, "keep going")
    await expect(assistant.get_by_test_id("part-text")).to_contain_text("System")
    assert "User messages" not in await assistant.inner_text()  # still streaming

    async with page.expect_response(resume_url) as on_reload:
        await page.reload()  # the page's stream is cut; the run goes on on the server
    assert (await on_reload.value).status == 200  # the reload resumed the run's stream
    await expect(assistant.get_by_test_id("part-text")).to_contain_text("User messages: keep going")
    await wait_ready(page)
    await expect(page.get_by_test_id("message")).to_have_count(2)  # one answer, resumed in place, not doubled
    await expect(page.get_by_test_id("error")).to_have_count(0)
    stored = httpx.get(f"{base}/agents/bot/threads/t1/messages").json()["messages"]
    assert [m["role"] for m in stored] == ["user", "assistant"]
    assert stored[1]["id"] == await assistant.get_attribute("data-id")
    assert "chatgate" not in (stored[1].get("metadata") or {})  # complete, not partial

"""chatgate's own chat page (``GET /``) in headless Chromium against a live server, as a user uses it.

The page is a real useChat client (the ``ai`` 6 chat class, bundled). Each test clicks and types,
reads what the page shows, and saves its last step as tests/artifacts/page-<test>.png.
"""

from __future__ import annotations

import asyncio
import re
import sqlite3
import time
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import httpx
import pytest
import pytest_asyncio
from playwright.async_api import Browser, Page, expect

from chatgate.config import Config
from tests.browser import recorded_page, screenshot
from tests.chat_page import assistants, axe_violations, open_page, send, wait_status
from tests.conftest import make_config
from tests.providers.fakes import fake_in_thread
from tests.providers.support import provider_table
from tests.threads.test_titles import TitlingModel

Serve = Callable[[Config], str]

pytestmark = pytest.mark.asyncio(loop_scope="module")


@pytest_asyncio.fixture(loop_scope="module")
async def page(browser: Browser, request: pytest.FixtureRequest) -> AsyncIterator[Page]:
    """A fresh page in its own context; its final state is saved as tests/artifacts/page-<test>.png."""
    errors: list[str] = []
    async with recorded_page(browser, f"page-{request.node.name}", 1000, 760) as page:
        page.on("pageerror", lambda error: errors.append(str(error)))
        # The page must live within its own Content-Security-Policy: no inline script or style.
        page.on("console", lambda message: errors.append(message.text) if "Content Security" in message.text else None)
        yield page
    assert errors == [], f"the page threw: {errors}"


def agents() -> Config:
    echo = {"model": "builtin:echo"}
    return make_config(
        {
            "shop": {
                **echo,
                "default": True,
                "description": "Echoes; can call pick_color in the browser and add on the server.",
                "client_tools": {
                    "pick_color": {
                        "description": "Ask the user to pick a colour.",
                        "parameters": {"type": "object", "properties": {"palette": {"type": "string"}}},
                    }
                },
                "tools": {"add": {"function": "tests.sample_tools:add", "requires_approval": True}},
            },
            "open": {**echo, "manage_system_prompt": "client", "system_prompt": "Default prompt."},
            "thinker": {**echo, "model_settings": {"reasoning": True}},
            "slow": {**echo, "model_settings": {"delay": 0.4}},
            "broken": {**echo, "model_settings": {"fail_after": 3}},
        },
        server={"approval_secret": "a-secret-of-enough-length"},
    )


async def test_the_page_lists_the_agents_and_a_turn_streams(page: Page, serve: Serve) -> None:
    await open_page(page, serve(agents()))
    options = page.get_by_label("Agent", exact=True).locator("option")
    await expect(options).to_have_text(["shop", "open", "thinker", "slow", "broken"])
    await expect(page.get_by_label("Agent", exact=True)).to_have_value("shop")
    await expect(page.get_by_test_id("policy")).to_contain_text("set by the server")
    await send(page, "hello there")
    await expect(assistants(page).nth(0)).to_contain_text("Last user message: hello there")
    await wait_status(page, "ready")
    await send(page, "and again")
    await expect(assistants(page).nth(1)).to_contain_text("Last user message: and again")
    await wait_status(page, "ready")
    await expect(page.locator("[data-testid=message][data-role=user]")).to_have_count(2)
    # each answer's usage, from its message.metadata: builtin:echo counts one input token per message
    # it was sent (1, then 3) and one output token per word it streams back
    await expect(assistants(page).get_by_test_id("usage")).to_have_text(
        ["in 1 · out 8 tokens · echo", "in 3 · out 8 tokens · echo"]
    )
    await expect(page.get_by_test_id("error")).to_be_hidden()


async def test_stop_ends_a_streaming_answer_where_it_is(page: Page, serve: Serve) -> None:
    await open_page(page, serve(agents()), "#agent=slow")
    await expect(page.get_by_label("Agent", exact=True)).to_have_value("slow")
    await send(page, "take your time")
    text = assistants(page).get_by_test_id("part-text")
    await expect(text).to_contain_text("System")
    await expect(page.get_by_role("button", name="Send", exact=True)).to_be_disabled()
    await page.get_by_role("button", name="Stop").click()
    await wait_status(page, "ready")
    stopped_at = await text.inner_text()
    await page.wait_for_timeout(900)  # more than two words' time: nothing arrives after the stop
    assert await text.inner_text() == stopped_at
    assert "Last user message" not in stopped_at
    await expect(page.get_by_test_id("error")).to_be_hidden()


async def test_regenerate_answers_the_last_message_again(page: Page, serve: Serve) -> None:
    await open_page(page, serve(agents()))
    posts: list[str] = []
    page.on("request", lambda request: posts.append(request.url) if request.method == "POST" else None)
    await send(page, "once more")
    await wait_status(page, "ready")
    async with page.expect_request(lambda request: request.method == "POST"):
        await page.get_by_role("button", name="Regenerate").click()
    await wait_status(page, "ready")
    await expect(assistants(page)).to_have_count(1)
    await expect(assistants(page)).to_contain_text("Last user message: once more")
    assert all(url.endswith("/agents/shop/chat") for url in posts)


async def test_new_chat_starts_empty(page: Page, serve: Serve) -> None:
    await open_page(page, serve(agents()))
    await send(page, "first chat")
    await expect(assistants(page)).to_contain_text("first chat")
    await wait_status(page, "ready")
    await page.get_by_role("button", name="New chat").click()
    await expect(page.get_by_test_id("message")).to_have_count(0)
    await expect(page.get_by_label("Message", exact=True)).to_be_focused()
    bodies: list[dict[str, object]] = []
    page.on("request", lambda request: bodies.append(request.post_data_json) if request.method == "POST" else None)
    await send(page, "second chat")
    await expect(assistants(page)).to_contain_text("Last user message: second chat")
    assert len(bodies[0]["messages"]) == 1  # type: ignore[arg-type]


async def test_a_frontend_tool_is_answered_in_the_page(page: Page, serve: Serve) -> None:
    await open_page(page, serve(agents()))
    await send(page, '/call pick_color {"palette": "warm"}')
    tool = page.locator("[data-testid=part-tool][data-tool-name=pick_color]")
    await expect(tool).to_have_attribute("data-state", "input-available")
    await expect(tool.get_by_test_id("tool-input")).to_contain_text('"palette": "warm"')
    await tool.get_by_label("Your answer for pick_color (JSON or text)").fill("red")
    await tool.get_by_role("button", name="Send answer").click()
    await expect(tool).to_have_attribute("data-state", "output-available")
    await expect(assistants(page).get_by_test_id("part-text")).to_contain_text(
        re.compile(r"Tool results: \S+ returned: red")
    )
    await wait_status(page, "ready")


async def test_an_approved_tool_runs_on_the_server(page: Page, serve: Serve) -> None:
    await open_page(page, serve(agents()))
    await send(page, '/call add {"a": 2, "b": 3}')
    tool = page.locator("[data-testid=part-tool][data-tool-name=add]")
    await expect(tool).to_have_attribute("data-state", "approval-requested")
    await tool.get_by_role("button", name="Approve add").click()
    await expect(tool).to_have_attribute("data-state", "output-available")
    await expect(tool.get_by_test_id("tool-output")).to_have_text("5")
    await expect(assistants(page).get_by_test_id("part-text")).to_contain_text(
        re.compile(r"Tool results: \S+ returned: 5")
    )
    await wait_status(page, "ready")


async def test_a_denied_tool_never_runs(page: Page, serve: Serve) -> None:
    await open_page(page, serve(agents()))
    await send(page, '/call add {"a": 2, "b": 3}')
    tool = page.locator("[data-testid=part-tool][data-tool-name=add]")
    await expect(tool).to_have_attribute("data-state", "approval-requested")
    await tool.get_by_role("button", name="Deny add").click()
    await expect(tool).to_have_attribute("data-state", "output-denied")
    await expect(tool).to_contain_text("You denied this call.")
    await wait_status(page, "ready")
    await expect(tool.get_by_test_id("tool-output")).to_have_count(0)


async def test_reasoning_is_shown_before_the_answer(page: Page, serve: Serve) -> None:
    await open_page(page, serve(agents()), "#agent=thinker")
    await send(page, "think first")
    assistant = assistants(page)
    await expect(assistant.get_by_test_id("reasoning-text")).to_have_text("I will repeat what I was given.")
    await expect(assistant.get_by_test_id("part-text")).to_contain_text("Last user message: think first")
    await wait_status(page, "ready")


async def test_a_model_failure_is_shown_to_the_user(page: Page, serve: Serve) -> None:
    await open_page(page, serve(agents()), "#agent=broken")
    await send(page, "this will break")
    await expect(page.get_by_role("alert")).to_have_text("The model failed.")
    await wait_status(page, "error")
    await expect(assistants(page)).to_contain_text("System prompt:")
    await expect(page.get_by_role("button", name="Send", exact=True)).to_be_enabled()


async def test_the_model_cannot_put_html_in_the_page(page: Page, serve: Serve) -> None:
    await open_page(page, serve(agents()))
    hostile = (
        "**bold** and *slanted* `<b>code</b>` [fine](https://example.com/a) [bad](javascript:alert(1)) "
        "<img src=x onerror=window.__pwned=1> <script>window.__pwned=2</script>"
    )
    await send(page, hostile)
    answer = assistants(page).get_by_test_id("part-text")
    await expect(answer).to_contain_text("<img src=x onerror=window.__pwned=1>")
    await wait_status(page, "ready")
    await expect(answer.locator("strong")).to_have_text("bold")
    await expect(answer.locator("em")).to_have_text("slanted")
    await expect(answer.locator("code")).to_have_text("<b>code</b>")
    links = answer.locator("a")
    await expect(links).to_have_count(1)
    await expect(links).to_have_attribute("href", "https://example.com/a")
    await expect(links).to_have_attribute("rel", "noopener noreferrer nofollow")
    await expect(answer).to_contain_text("[bad](javascript:alert(1))")
    assert await page.locator("[data-testid=messages] img, [data-testid=messages] script, b").count() == 0
    assert await page.evaluate("window.__pwned") is None

    await send(page, "blocks:\n\n- one\n- **two**\n\n1. first\n\n```\n<i>fenced</i>\n```\nafter")
    await wait_status(page, "ready")
    second = assistants(page).nth(1).get_by_test_id("part-text")
    await expect(second.locator("ul > li")).to_have_text(["one", "two"])
    await expect(second.locator("ol > li")).to_have_text(["first"])
    await expect(second.locator("pre > code")).to_have_text("<i>fenced</i>")
    await expect(second.locator("i")).to_have_count(0)


async def test_the_system_message_field_is_only_for_client_mode_agents(page: Page, serve: Serve) -> None:
    await open_page(page, serve(agents()))
    field = page.get_by_label("System message (this agent lets the client write it)")
    await expect(field).to_be_hidden()
    await page.get_by_label("Agent", exact=True).select_option("open")
    await expect(page.get_by_test_id("policy")).to_contain_text("written by you")
    await expect(field).to_be_visible()
    await field.fill("Answer like a pirate.")
    await send(page, "ahoy")
    await expect(assistants(page)).to_contain_text("System prompt: Answer like a pirate.")
    await wait_status(page, "ready")
    await page.get_by_label("Agent", exact=True).select_option("thinker")
    await expect(field).to_be_hidden()
    await expect(page.get_by_test_id("message")).to_have_count(0)


async def test_the_keyboard_sends_and_breaks_lines(page: Page, serve: Serve) -> None:
    await open_page(page, serve(agents()))
    await page.keyboard.press("Tab")  # from the top: the agent picker comes first
    await expect(page.get_by_label("Agent", exact=True)).to_be_focused()
    outline = await page.get_by_label("Agent", exact=True).evaluate("e => getComputedStyle(e).outlineStyle")
    assert outline not in ("", "none")
    await page.get_by_label("Message", exact=True).focus()
    await page.keyboard.type("line one")
    await page.keyboard.press("Shift+Enter")
    await page.keyboard.type("line two")
    await page.keyboard.press("Enter")
    user = page.locator("[data-testid=message][data-role=user] [data-testid=part-text]")
    await expect(user).to_have_text("line one\nline two")
    await expect(assistants(page)).to_contain_text("line two")
    await expect(page.get_by_label("Message", exact=True)).to_have_value("")
    await wait_status(page, "ready")


def kept(tmp_path: Path, **settings: Any) -> Config:
    agent = {
        "model": "builtin:echo",
        "system_prompt": "House prompt.",
        "conversations": "server",
        "prompts": {"pirate": "You are a pirate."},
        "model_settings": settings,
    }
    return make_config({"kept": agent}, store={"url": f"sqlite:///{tmp_path / 'threads.db'}"})


async def test_a_new_threads_title_replaces_its_first_question_in_the_list_without_a_reload(
    page: Page, serve: Serve, tmp_path: Path
) -> None:
    fake = TitlingModel()
    with fake_in_thread(fake=fake):
        agent = {"model": "up:m", "conversations": "server", "titles": True}
        providers = {"up": provider_table("openai", f"{fake.url}/v1")}
        store = {"url": f"sqlite:///{tmp_path / 'threads.db'}"}
        await open_page(page, serve(make_config({"kept": agent}, providers=providers, store=store)))
        threads = page.get_by_role("navigation", name="Conversations")
        await send(page, "Which city is the capital of France?")
        await expect(assistants(page)).to_have_text(re.compile("Paris is the capital of France."))
        titled = threads.get_by_role("button", name="Capital of France 1")
        await expect(titled).to_be_visible()
        await page.reload()  # stored: the title is the list's after a reload too
        await expect(titled).to_have_attribute("aria-current", "true")
    assert len(fake.titles) == 1


async def test_a_server_held_thread_is_listed_reloaded_swapped_and_reset(
    page: Page, serve: Serve, tmp_path: Path
) -> None:
    await open_page(page, serve(kept(tmp_path)))
    threads = page.get_by_role("navigation", name="Conversations")
    await expect(threads).to_be_visible()
    await send(page, "first question")
    await expect(assistants(page)).to_contain_text("System prompt: House prompt.")
    await wait_status(page, "ready")
    await expect(threads.get_by_role("button", name="first question")).to_be_visible()
    assert "thread=" in page.url

    await page.reload()
    await wait_status(page, "ready")
    await expect(page.locator("[data-testid=message][data-role=user]")).to_have_text("Youfirst question")
    await expect(assistants(page)).to_contain_text("Last user message: first question")
    await expect(threads.get_by_role("button", name="first question")).to_have_attribute("aria-current", "true")

    await page.get_by_text("System message and reset").click()
    await page.get_by_label("or a named prompt").fill("pirate")
    await page.get_by_role("button", name="Swap system message").click()
    await expect(page.get_by_test_id("admin-done")).to_have_text("The system message was swapped.")
    await send(page, "second question")
    await expect(assistants(page).nth(1)).to_contain_text("System prompt: You are a pirate.")
    await wait_status(page, "ready")

    await page.get_by_role("button", name="New chat").click()
    await expect(page.get_by_test_id("message")).to_have_count(0)
    await threads.get_by_role("button", name="first question").click()
    await expect(page.get_by_test_id("message")).to_have_count(4)

    await page.get_by_role("button", name="Reset conversation").click()
    await expect(page.get_by_test_id("admin-done")).to_have_text("The conversation was reset.")
    await expect(page.get_by_test_id("message")).to_have_count(0)
    await expect(page.get_by_test_id("error")).to_be_hidden()


SLOW_QUESTION = "please answer this one slowly, word by word, so that a reload lands in the middle"


async def answer_length(page: Page) -> int:
    """How many characters of the (first) assistant message the page shows now."""
    if await assistants(page).count() == 0:
        return 0
    return len(await assistants(page).first.inner_text())


async def test_a_reload_during_an_answer_resumes_it_live(page: Page, serve: Serve, tmp_path: Path) -> None:
    await open_page(page, serve(kept(tmp_path, delay=0.2)))
    await send(page, SLOW_QUESTION)  # an unbroken run first, to compare with
    await expect(assistants(page)).to_contain_text(f"Last user message: {SLOW_QUESTION}", timeout=15_000)
    await wait_status(page, "ready")
    unbroken = await assistants(page).first.inner_text()
    await page.get_by_role("button", name="New chat").click()

    await send(page, SLOW_QUESTION)
    await expect(assistants(page)).to_contain_text("System prompt")
    await page.reload()  # the run goes on on the server; the page resumes its stream
    await expect(page.locator("[data-testid=message][data-role=user]")).to_contain_text(SLOW_QUESTION)
    await wait_status(page, "streaming")
    seen = [await answer_length(page)]
    while await page.get_by_test_id("status").text_content() == "streaming":
        seen.append(await answer_length(page))
        await page.wait_for_timeout(100)
    await wait_status(page, "ready")
    growing = sorted(set(length for length in seen if length))
    assert len(growing) >= 3, f"the answer did not stream in after the reload: {seen}"
    assert growing[0] < len(unbroken), "the answer was complete before it streamed in"
    await expect(assistants(page)).to_have_count(1)
    assert await assistants(page).first.inner_text() == unbroken
    await expect(page.get_by_test_id("running")).to_be_hidden()
    await expect(page.get_by_test_id("thread-system")).to_have_text("Now: the agent's own prompt.")


async def test_a_run_the_page_cannot_resume_is_waited_for(page: Page, serve: Serve, tmp_path: Path) -> None:
    """A run started through AG-UI has no useChat stream to replay (a 204): the page waits and reloads."""
    base_url = serve(kept(tmp_path, delay=0.15))
    body = {
        "threadId": "agui-thread",
        "runId": "r1",
        "messages": [{"id": "u1", "role": "user", "content": SLOW_QUESTION}],
    }
    async with (
        httpx.AsyncClient(timeout=30) as client,
        client.stream("POST", f"{base_url}/agents/kept/ag-ui", json=body) as run,
    ):
        lines = run.aiter_lines()
        async for line in lines:
            if "TEXT_MESSAGE_CONTENT" in line:
                break
        await open_page(page, base_url, "#agent=kept&thread=agui-thread")
        await expect(page.get_by_test_id("running")).to_be_visible()
        async for _ in lines:
            pass
    await expect(assistants(page)).to_contain_text(f"Last user message: {SLOW_QUESTION}", timeout=15_000)
    await expect(page.get_by_test_id("running")).to_be_hidden()
    await expect(assistants(page)).to_have_count(1)


async def test_a_run_that_ends_between_two_reads_is_still_reloaded(page: Page, serve: Serve, tmp_path: Path) -> None:
    """The wait decides on one read a poll: a poll saying "running" then a read saying "ended" reloads.

    The thread's first two reads are answered "running" (the run has in fact ended) and the third
    fails (503). The page used to re-read the thread after a poll said "running" and stop waiting,
    without reloading, when that read found the run ended or failed; now each poll decides alone and
    a failed one is tried again.
    """
    base_url = serve(kept(tmp_path))
    body = {"threadId": "raced", "runId": "r1", "messages": [{"id": "u1", "role": "user", "content": "hello"}]}
    assert httpx.post(f"{base_url}/agents/kept/ag-ui", json=body, timeout=30).status_code == 200
    answers = ["running", "running", "failed"]

    async def stale(route: Any) -> None:
        if not answers:
            await route.continue_()
            return
        answer = answers.pop(0)
        if answer == "failed":
            await route.fulfill(status=503, json={"error": {"code": "store_unavailable", "message": "later"}})
            return
        response = await route.fetch()
        await route.fulfill(response=response, json={**await response.json(), "running": True})

    await page.route("**/agents/kept/threads/raced", stale)
    await open_page(page, base_url, "#agent=kept&thread=raced")
    # The answer is drawn from the first read of the messages, before any wait: the wait must be seen
    # to begin, or the checks below could pass before the page read the thread at all.
    await expect(page.get_by_test_id("running")).to_be_visible()
    await expect(page.get_by_test_id("running")).to_be_hidden(timeout=15_000)
    await expect(assistants(page)).to_contain_text("Last user message: hello")
    assert answers == []


@pytest.mark.parametrize("width,height", [(1280, 800), (390, 844)], ids=["desktop", "phone"])
async def test_no_serious_accessibility_violations(
    browser: Browser, serve: Serve, tmp_path: Path, width: int, height: int
) -> None:
    # axe is injected as a script, which the page's own policy refuses: this context bypasses it.
    context = await browser.new_context(viewport={"width": width, "height": height}, bypass_csp=True)
    page = await context.new_page()
    try:
        await open_page(page, serve(everything(tmp_path)))
        await send(page, "**hello** `code` [a link](https://example.com/)")
        await wait_status(page, "ready")
        await send(page, '/call pick_color {"palette": "warm"}')
        await expect(page.get_by_role("button", name="Send answer")).to_be_visible()
        await page.get_by_label("Agent", exact=True).focus()
        assert await axe_violations(page) == []
        overflow = await page.evaluate("document.documentElement.scrollWidth - window.innerWidth")
        assert overflow <= 0, "the page scrolls sideways"
        await page.get_by_label("Agent", exact=True).select_option("open")
        await expect(page.get_by_label("System message (this agent lets the client write it)")).to_be_visible()
        assert await axe_violations(page) == []
        await page.get_by_label("Agent", exact=True).select_option("kept")  # conversations and their controls
        await send(page, "a kept conversation")
        await wait_status(page, "ready")
        await page.get_by_text("System message and reset").click()
        await expect(page.get_by_role("button", name="Reset conversation")).to_be_visible()
        assert await axe_violations(page) == []
        overflow = await page.evaluate("document.documentElement.scrollWidth - window.innerWidth")
        assert overflow <= 0, "the page scrolls sideways"
    finally:
        await screenshot(page, f"page-accessibility-{width}x{height}")
        await context.close()


def everything(tmp_path: Path) -> Config:
    """Every agent of ``agents()`` and the server-held ``kept``."""
    every = {**agents().agents, **kept(tmp_path).agents}
    plain = {name: agent.model_dump(exclude_unset=True) for name, agent in every.items()}
    return make_config(
        plain,
        store={"url": f"sqlite:///{tmp_path / 'threads.db'}"},
        server={"approval_secret": "a-secret-of-enough-length"},
    )


ALICE = "alice-secret-key-0123"
ROOT = "root-secret-key-456789"


def with_keys(tmp_path: Path) -> Config:
    base = kept(tmp_path)
    agents = {name: agent.model_dump(exclude_unset=True) for name, agent in base.agents.items()}
    agents["hidden"] = {"model": "builtin:echo"}
    return make_config(
        agents,
        store={"url": f"sqlite:///{tmp_path / 'threads.db'}"},
        keys=[
            {"id": "alice", "key": ALICE, "agents": ["kept"]},
            {"id": "root", "key": ROOT, "admin": True},
        ],
    )


async def enter_key(page: Page, key: str) -> None:
    dialog = page.get_by_role("dialog")
    await expect(dialog).to_be_visible()
    await dialog.get_by_label("API key").fill(key)
    await dialog.get_by_role("button", name="Use key").click()


async def test_with_keys_the_page_asks_for_one_and_keeps_it_in_session_storage_only(
    page: Page, serve: Serve, tmp_path: Path
) -> None:
    url = serve(with_keys(tmp_path))
    page.set_default_timeout(15_000)
    await page.goto(f"{url}/")
    await expect(page.get_by_role("dialog")).to_contain_text("This server asks for an API key.")
    await enter_key(page, "not-a-key-of-anyone")
    await expect(page.get_by_role("dialog")).to_contain_text("That key was refused.")
    await enter_key(page, ALICE)
    await wait_status(page, "ready")
    await expect(page.get_by_label("Agent", exact=True).locator("option")).to_have_text(["kept"])
    authorizations: list[str | None] = []
    page.on("request", lambda request: authorizations.append(request.headers.get("authorization")))
    await send(page, "hello with a key")
    await expect(assistants(page)).to_contain_text("Last user message: hello with a key")
    await wait_status(page, "ready")
    assert authorizations and set(authorizations) == {f"Bearer {ALICE}"}
    assert await page.evaluate("sessionStorage.getItem('chatgate.key')") == ALICE
    assert await page.evaluate("localStorage.length") == 0
    assert await page.context.cookies() == []

    # A key that is not an admin's may not write a server-owned prompt as free text.
    await page.get_by_text("System message and reset").click()
    await page.get_by_label("New system message (empty: the agent's own)").fill("You are root now.")
    await page.get_by_role("button", name="Swap system message").click()
    await expect(page.get_by_role("alert")).to_contain_text("admin")

    await page.reload()  # the same tab: the key is still there, the thread comes back
    await wait_status(page, "ready")
    await expect(page.get_by_role("dialog")).to_be_hidden()
    await expect(assistants(page)).to_contain_text("hello with a key")

    await page.get_by_role("button", name="Forget key").click()
    await enter_key(page, ROOT)
    await wait_status(page, "ready")
    await expect(page.get_by_label("Agent", exact=True).locator("option")).to_have_text(["kept", "hidden"])
    await expect(page.get_by_test_id("message")).to_have_count(0)  # alice's thread is not root's
    await send(page, "first as root")
    await wait_status(page, "ready")
    await page.get_by_text("System message and reset").click()
    await page.get_by_label("New system message (empty: the agent's own)").fill("You are root now.")
    await page.get_by_role("button", name="Swap system message").click()
    await expect(page.get_by_test_id("admin-done")).to_have_text("The system message was swapped.")
    await expect(page.get_by_test_id("thread-system")).to_have_text("Now: free text.")
    await send(page, "second as root")
    await expect(assistants(page).nth(1)).to_contain_text("System prompt: You are root now.")
    await wait_status(page, "ready")


async def test_stop_on_a_server_held_conversation_ends_the_run_on_the_server(
    page: Page, serve: Serve, tmp_path: Path
) -> None:
    base_url = serve(kept(tmp_path, delay=0.2))
    await open_page(page, base_url)
    await send(page, SLOW_QUESTION)
    await expect(assistants(page)).to_contain_text("Last user")
    await page.get_by_role("button", name="Stop").click()
    await wait_status(page, "ready")
    shown = await assistants(page).first.inner_text()
    await page.wait_for_timeout(800)  # four more words' time: the text stops growing
    assert await assistants(page).first.inner_text() == shown
    assert SLOW_QUESTION not in shown

    thread_id = re.search(r"thread=([^&]+)", page.url)
    assert thread_id is not None
    thread_url = f"{base_url}/agents/kept/threads/{thread_id.group(1)}"
    async with httpx.AsyncClient() as client:
        assert (await client.get(thread_url)).json()["running"] is False
        saved = (await client.get(f"{thread_url}/messages")).json()["messages"][-1]
    assert saved["role"] == "assistant"
    assert saved["metadata"]["chatgate"]["status"] == "partial"
    assert SLOW_QUESTION not in "".join(part.get("text", "") for part in saved["parts"])

    await page.reload()  # the saved partial answer is what the page showed, now marked partial
    await expect(assistants(page)).to_contain_text("(partial)")
    await expect(assistants(page)).to_have_count(1)
    assert (await assistants(page).first.inner_text()).replace("\n\n(partial)", "") == shown
    await send(page, "and the thread takes the next turn")
    await expect(assistants(page).nth(1)).to_contain_text("Last user message: and the thread takes the next turn")
    await wait_status(page, "ready")
    await expect(page.get_by_test_id("error")).to_be_hidden()


async def test_a_refused_request_shows_the_servers_message(page: Page, serve: Serve) -> None:
    config = make_config({"bot": {"model": "builtin:echo"}}, server={"max_text_chars": 40})
    await open_page(page, serve(config))
    await send(page, "this message is far longer than the forty characters allowed")
    await wait_status(page, "error")
    await expect(page.get_by_role("alert")).to_contain_text("characters")
    await expect(page.get_by_role("alert")).not_to_contain_text("{")  # the message, not the JSON around it
    await page.get_by_role("button", name="New chat").click()
    await expect(page.get_by_role("alert")).to_be_hidden()
    await send(page, "short")
    await expect(assistants(page)).to_contain_text("Last user message: short")


async def test_a_v7_agent_works_with_the_page_too(page: Page, serve: Serve) -> None:
    agent = {
        "model": "builtin:echo",
        "vercel_ai_version": "v7",
        "model_settings": {"reasoning": True},
        "tools": {"add": {"function": "tests.sample_tools:add", "requires_approval": True}},
    }
    await open_page(page, serve(make_config({"seven": agent}, server={"approval_secret": "a-secret-of-enough-length"})))
    await send(page, '/call add {"a": 1, "b": 2}')
    tool = page.locator("[data-testid=part-tool][data-tool-name=add]")
    await tool.get_by_role("button", name="Approve add").click()
    await expect(tool.get_by_test_id("tool-output")).to_have_text("3")
    await expect(assistants(page).get_by_test_id("part-text")).to_contain_text(re.compile(r"returned: 3"))
    await expect(assistants(page).get_by_test_id("reasoning-text").first).to_have_text(
        "I will repeat what I was given."
    )
    await wait_status(page, "ready")


NOT_FOUND = "That conversation was not found: it does not exist, or it belongs to another key or user."


async def test_an_unknown_thread_in_the_url_says_why_and_offers_a_new_chat(
    page: Page, serve: Serve, tmp_path: Path
) -> None:
    url = serve(kept(tmp_path))
    page.set_default_timeout(15_000)
    await page.goto(f"{url}/#agent=kept&thread=no-such-thread")
    await wait_status(page, "ready")
    await expect(page.get_by_role("alert")).to_contain_text(NOT_FOUND)  # shown, not cleared in the same tick
    await expect(page.get_by_role("alert")).to_contain_text("A new chat is open below.")
    await expect(page.get_by_test_id("message")).to_have_count(0)
    assert "thread=" not in page.url  # the URL no longer names the thread that cannot be opened
    await send(page, "a fresh start")
    await expect(assistants(page)).to_contain_text("Last user message: a fresh start")
    await wait_status(page, "ready")
    await expect(page.get_by_test_id("error")).to_be_hidden()


async def test_another_owners_thread_in_the_url_is_not_shown_and_says_why(
    page: Page, serve: Serve, tmp_path: Path
) -> None:
    url = serve(with_keys(tmp_path))
    message = {"id": "u1", "role": "user", "parts": [{"type": "text", "text": "alice's secret"}]}
    answer = httpx.post(
        f"{url}/agents/kept/chat",
        json={"id": "alices", "message": message, "trigger": "submit-message"},
        headers={"authorization": f"Bearer {ALICE}"},
        timeout=30,
    )
    assert answer.status_code == 200
    page.set_default_timeout(15_000)
    await page.goto(f"{url}/#agent=kept&thread=alices")
    await enter_key(page, ROOT)
    await wait_status(page, "ready")
    await expect(page.get_by_role("alert")).to_contain_text(NOT_FOUND)
    await expect(page.get_by_test_id("message")).to_have_count(0)
    await expect(page.get_by_text("alice's secret")).to_have_count(0)
    assert "thread=" not in page.url


def _wait_for_usage_row(database: Path) -> None:
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline:
        with sqlite3.connect(database) as connection:
            if connection.execute("SELECT COUNT(*) FROM usage").fetchone()[0]:
                return
        time.sleep(0.05)
    raise AssertionError("the answer's usage row was never written")


def _feedback_rows(database: Path) -> list[tuple[str, int, str | None]]:
    with sqlite3.connect(database) as connection:
        return list(connection.execute("SELECT agent, score, thread_key FROM feedback ORDER BY agent"))


@pytest.mark.parametrize("agent", ["shop", "kept"])
async def test_thumbs_on_an_answer_are_kept_changed_and_withdrawn(
    page: Page, serve: Serve, tmp_path: Path, agent: str
) -> None:
    database = tmp_path / "threads.db"
    echo = {"model": "builtin:echo", "system_prompt": "House prompt."}
    agents = {"shop": {**echo, "default": True}, "kept": {**echo, "conversations": "server", "titles": False}}
    await open_page(page, serve(make_config(agents, store={"url": f"sqlite:///{database}"})), f"#agent={agent}")
    await send(page, "rate me")
    answer = assistants(page).nth(0)
    await expect(answer).to_contain_text("Last user message: rate me")
    await wait_status(page, "ready")
    await asyncio.to_thread(_wait_for_usage_row, database)  # written just after the answer: a person is slower
    up, down = answer.get_by_role("button", name="Good answer"), answer.get_by_role("button", name="Bad answer")
    await up.click()
    await expect(up).to_have_attribute("aria-pressed", "true")
    rows = await asyncio.to_thread(_feedback_rows, database)
    assert [(row[0], row[1], row[2] is not None) for row in rows] == [(agent, 1, agent == "kept")]
    await down.click()  # changes it
    await expect(down).to_have_attribute("aria-pressed", "true")
    await expect(up).to_have_attribute("aria-pressed", "false")
    assert [row[1] for row in await asyncio.to_thread(_feedback_rows, database)] == [-1]
    await down.click()  # the pressed thumb again: withdrawn
    await expect(down).to_have_attribute("aria-pressed", "false")
    assert await asyncio.to_thread(_feedback_rows, database) == []
    await expect(page.get_by_test_id("error")).to_be_hidden()

"""The real useChat app (``@ai-sdk/react`` on ai 5, 6 and 7) in headless Chromium against a live chatgate.

Each test clicks through tests/clients/usechat as a user would and reads what the page renders; its
last step is saved as a screenshot in tests/artifacts/.
"""

from __future__ import annotations

import asyncio
import re
import sqlite3
import threading
import time
from collections.abc import AsyncIterator, Callable
from pathlib import Path

import httpx
import pytest
import pytest_asyncio
from playwright.async_api import Browser, Locator, Page, expect

from chatgate.config import Config
from tests.browser import recorded_page
from tests.conftest import make_config
from tests.mcp.real_servers import everything_stdio
from tests.providers.fakes import Reply, fake_in_thread, openai_chunk, openai_usage
from tests.providers.support import provider_table
from tests.providers.test_ui_clients import openai_text
from tests.usechat_app import build_usechat_app, open_usechat, send, wait_ready

Serve = Callable[[Config], str]

ALL_MAJORS = pytest.mark.parametrize("major", [5, 6, 7], ids=lambda m: f"ai{m}")
APPROVAL_MAJORS = pytest.mark.parametrize("major", [6, 7], ids=lambda m: f"ai{m}")  # ai 5 has no approvals

# One Chromium for the module (a launch costs about a second); each test gets its own context.
pytestmark = pytest.mark.asyncio(loop_scope="module")


@pytest.fixture(scope="session")
def usechat_dist() -> Path:
    return build_usechat_app()


@pytest_asyncio.fixture(loop_scope="module")
async def page(browser: Browser, request: pytest.FixtureRequest) -> AsyncIterator[Page]:
    """A fresh page in its own context; its final state is saved as tests/artifacts/usechat-<test>.png."""
    async with recorded_page(browser, f"usechat-{request.node.name}", 900, 700) as page:
        yield page


def agents(major: int) -> Config:
    version = f"v{major}"
    base = {"model": "builtin:echo", "vercel_ai_version": version}
    shop = {
        **base,
        "client_tools": {
            "pick_color": {
                "description": "Ask the user to pick a colour.",
                "parameters": {"type": "object", "properties": {"palette": {"type": "string"}}},
            }
        },
        "tools": {"add": {"function": "tests.sample_tools:add", "requires_approval": True}},
    }
    return make_config(
        {
            "shop": shop,
            "thinker": {**base, "model_settings": {"reasoning": True}},
            "slow": {**base, "model_settings": {"delay": 0.25}},
            "broken": {**base, "model_settings": {"fail_after": 3}},
        },
        server={"approval_secret": "a-secret-of-enough-length"},
    )


async def open_app(page: Page, serve: Serve, dist: Path, major: int, agent: str = "shop") -> None:
    await open_usechat(page, dist, serve(agents(major)), agent, major)


def answer_text(page: Page) -> Locator:
    """The text parts of the assistant's messages."""
    return page.locator("[data-testid=message][data-role=assistant] [data-testid=part-text]")


@ALL_MAJORS
async def test_a_turn_a_second_turn_and_a_regenerate(page: Page, serve: Serve, usechat_dist: Path, major: int) -> None:
    await open_app(page, serve, usechat_dist, major)
    assert (await page.get_by_test_id("ai-major").inner_text()).startswith(f"{major}.")
    chat_posts: list[str] = []
    page.on("request", lambda request: chat_posts.append(request.url) if request.method == "POST" else None)
    assistants = page.locator("[data-testid=message][data-role=assistant]")

    await send(page, "hello there")
    await expect(assistants.nth(0)).to_contain_text("Last user message: hello there")
    await wait_ready(page)
    await send(page, "and again")
    await expect(assistants.nth(1)).to_contain_text("Last user message: and again")
    await wait_ready(page)

    await page.get_by_test_id("regenerate").click()
    await wait_ready(page)
    await expect(assistants).to_have_count(2)
    await expect(assistants.nth(1)).to_contain_text("Last user message: and again")
    await expect(page.locator("[data-testid=message][data-role=user]")).to_have_count(2)
    assert len(chat_posts) == 3
    assert all(url.endswith("/agents/shop/chat") for url in chat_posts)
    await expect(page.get_by_test_id("error")).to_have_count(0)


@pytest.mark.parametrize("major", [5, 7], ids=lambda m: f"ai{m}")
async def test_stop_ends_a_streaming_answer_where_it_is(
    page: Page, serve: Serve, usechat_dist: Path, major: int
) -> None:
    await open_app(page, serve, usechat_dist, major, agent="slow")
    await send(page, "take your time")
    text = page.locator("[data-testid=message][data-role=assistant] [data-testid=part-text]")
    await expect(text).to_contain_text("System")
    await page.get_by_test_id("stop").click()
    await wait_ready(page)
    stopped_at = await text.inner_text()
    await page.wait_for_timeout(600)  # two more words' time: nothing arrives after the stop
    assert await text.inner_text() == stopped_at
    assert "Last user message" not in stopped_at
    await expect(page.get_by_test_id("error")).to_have_count(0)


@ALL_MAJORS
async def test_a_frontend_tool_answered_in_the_page(page: Page, serve: Serve, usechat_dist: Path, major: int) -> None:
    await open_app(page, serve, usechat_dist, major)
    await send(page, '/call pick_color {"palette": "warm"}')
    tool = page.locator("[data-testid=part-tool][data-tool-name=pick_color]")
    await expect(tool).to_have_attribute("data-state", "input-available")
    await page.get_by_test_id("answer-tool").click()
    await expect(tool).to_have_attribute("data-state", "output-available")
    await expect(answer_text(page)).to_contain_text(re.compile(r"Tool results: \S+ returned: red"))
    await wait_ready(page)


@APPROVAL_MAJORS
async def test_an_approved_tool_runs_on_the_server(page: Page, serve: Serve, usechat_dist: Path, major: int) -> None:
    await open_app(page, serve, usechat_dist, major)
    await send(page, '/call add {"a": 2, "b": 3}')
    tool = page.locator("[data-testid=part-tool][data-tool-name=add]")
    await expect(tool).to_have_attribute("data-state", "approval-requested")
    await page.get_by_test_id("approve").click()
    await expect(tool).to_have_attribute("data-state", "output-available")
    await expect(tool.get_by_test_id("tool-output")).to_have_text("5")
    await expect(answer_text(page)).to_contain_text(re.compile(r"Tool results: \S+ returned: 5"))
    await wait_ready(page)


async def test_an_mcp_tool_call_and_its_output_are_shown(page: Page, serve: Serve, usechat_dist: Path) -> None:
    agent = {"model": "builtin:echo", "vercel_ai_version": "v7", "mcp": {"everything": {"include": ["echo"]}}}
    config = make_config({"ops": agent}, mcp_servers={"everything": {"command": everything_stdio()}})
    base = serve(config)
    async with httpx.AsyncClient() as client:
        while (await client.get(f"{base}/readyz")).status_code != 200:  # the server has listed its tools
            await asyncio.sleep(0.05)
    await open_usechat(page, usechat_dist, base, "ops", 7)
    await send(page, '/call everything__echo {"message": "from the page"}')
    tool = page.locator("[data-testid=part-tool][data-tool-name=everything__echo]")
    await expect(tool).to_have_attribute("data-state", "output-available")
    await expect(tool.get_by_test_id("tool-output")).to_have_text('"Echo: from the page"')
    await expect(answer_text(page)).to_contain_text(re.compile(r"Tool results: \S+ returned: Echo: from the page"))
    await wait_ready(page)


@APPROVAL_MAJORS
async def test_a_denied_tool_never_runs(page: Page, serve: Serve, usechat_dist: Path, major: int) -> None:
    await open_app(page, serve, usechat_dist, major)
    await send(page, '/call add {"a": 2, "b": 3}')
    tool = page.locator("[data-testid=part-tool][data-tool-name=add]")
    await expect(tool).to_have_attribute("data-state", "approval-requested")
    await page.get_by_test_id("deny").click()
    await expect(tool).to_have_attribute("data-state", "output-denied")
    await expect(answer_text(page)).to_contain_text("The user denied this tool call")
    await wait_ready(page)
    await expect(tool.get_by_test_id("tool-output")).to_have_count(0)


@pytest.mark.parametrize("major", [5, 7], ids=lambda m: f"ai{m}")
async def test_reasoning_is_shown_before_the_answer(page: Page, serve: Serve, usechat_dist: Path, major: int) -> None:
    await open_app(page, serve, usechat_dist, major, agent="thinker")
    await send(page, "think first")
    assistant = page.locator("[data-testid=message][data-role=assistant]")
    await expect(assistant.get_by_test_id("part-reasoning")).to_have_text("I will repeat what I was given.")
    await expect(assistant.get_by_test_id("part-text")).to_contain_text("Last user message: think first")
    await wait_ready(page)


@pytest.mark.parametrize("major", [5, 7], ids=lambda m: f"ai{m}")
async def test_a_model_failure_is_shown_to_the_user(page: Page, serve: Serve, usechat_dist: Path, major: int) -> None:
    await open_app(page, serve, usechat_dist, major, agent="broken")
    await send(page, "this will break")
    await expect(page.get_by_test_id("error")).to_have_text("The model failed.")
    await expect(page.get_by_test_id("status")).to_have_text("error")
    await expect(page.locator("[data-testid=message][data-role=assistant]")).to_contain_text("System prompt:")


def _answer_reporting(text: str, prompt: int, completion: int, cached: int, reasoning: int) -> Reply:
    """An OpenAI-compatible streamed answer of ``text`` whose usage chunk reports these token counts."""
    usage_chunk = openai_usage(prompt, completion, cached=cached, reasoning=reasoning)
    return Reply([openai_chunk({"content": text}), openai_chunk({}, "stop"), usage_chunk, b"data: [DONE]\n\n"])


@pytest.mark.parametrize("major", [5, 7], ids=lambda m: f"ai{m}")
async def test_each_answer_shows_the_usage_its_upstream_reported(
    page: Page, serve: Serve, usechat_dist: Path, major: int
) -> None:
    first = _answer_reporting("First.", 1234, 56, 1000, 7)
    second = _answer_reporting("Second.", 2345, 67, 0, 0)
    with fake_in_thread(first, second) as fake:
        agent = {"model": "up:model-x", "vercel_ai_version": f"v{major}"}
        base = serve(make_config({"bot": agent}, providers={"up": provider_table("openai", fake.url)}))
        await open_usechat(page, usechat_dist, base, "bot", major)
        usage = page.locator("[data-testid=message][data-role=assistant] [data-testid=usage]")
        await send(page, "one")
        await expect(usage).to_have_text(["in 1234 · out 56 tokens · 7 reasoning · 1000 cached · model-x"])
        await wait_ready(page)
        await send(page, "two")
        await wait_ready(page)
        # each answer keeps its own turn's numbers, from its own message.metadata
        await expect(usage).to_have_text(
            [
                "in 1234 · out 56 tokens · 7 reasoning · 1000 cached · model-x",
                "in 2345 · out 67 tokens · 0 reasoning · 0 cached · model-x",
            ]
        )
    assert len(fake.requests) == 2  # one model call per turn
    await expect(page.locator("[data-testid=message][data-role=user] [data-testid=usage]")).to_have_count(0)


@pytest.mark.parametrize("major", [6, 7], ids=lambda m: f"ai{m}")
async def test_a_model_failing_mid_answer(page: Page, serve: Serve, usechat_dist: Path, major: int) -> None:
    """ai 7 drops the partial answer for the fallback's (one answer); ai 6, which cannot, keeps it and the error."""
    shown = threading.Event()  # holds the first model after "Hal" until the page shows it
    dead_reply = Reply([openai_chunk({"content": "Hal"}), shown], ending="cut")
    with fake_in_thread(dead_reply) as dead, fake_in_thread(openai_text("Hello", " there")) as live:
        providers = {"up0": provider_table("openai", dead.url), "up1": provider_table("openai", live.url)}
        agent = {"model": "up0:m0", "fallbacks": ["up1:m1"], "vercel_ai_version": f"v{major}"}
        base = serve(make_config({"bot": agent}, providers=providers))
        await open_usechat(page, usechat_dist, base, "bot", major)
        answers = page.locator("[data-testid=message][data-role=assistant] [data-testid=part-text]")
        try:
            await send(page, "Hi")
            await expect(answers).to_have_text(["Hal"])  # the person saw the partial answer
        finally:
            shown.set()
        if major == 7:
            await expect(answers).to_have_text(["Hello there"])  # exactly one answer: the replacement
            await wait_ready(page)
            await expect(page.get_by_test_id("error")).to_have_count(0)
            assert len(live.requests) == 1
        else:
            await expect(page.get_by_test_id("error")).to_have_text("The model stream was interrupted.")
            await expect(answers).to_have_text(["Hal"])
            assert live.requests == []
    await expect(page.locator("[data-testid=message][data-role=assistant]")).to_have_count(1)


@ALL_MAJORS
async def test_a_thumb_on_an_answer_is_kept_and_withdrawn(
    page: Page, serve: Serve, usechat_dist: Path, major: int, tmp_path: Path
) -> None:
    database = tmp_path / "usage.db"
    agent = {"model": "builtin:echo", "vercel_ai_version": f"v{major}"}
    url = serve(make_config({"shop": agent}, store={"url": f"sqlite:///{database}"}))
    await open_usechat(page, usechat_dist, url, "shop", major)
    await send(page, "rate me")
    await wait_ready(page)
    await asyncio.to_thread(_wait_for_row, database, "usage")  # written just after the answer: a person is slower
    answer = page.locator("[data-testid=message][data-role=assistant]")
    up = answer.get_by_test_id("thumb-up")
    await up.click()
    await expect(up).to_have_attribute("aria-pressed", "true")
    assert await asyncio.to_thread(_scores, database) == [1]
    await up.click()
    await expect(up).to_have_attribute("aria-pressed", "false")
    assert await asyncio.to_thread(_scores, database) == []
    await expect(page.get_by_test_id("feedback-error")).to_have_count(0)


def _wait_for_row(database: Path, table: str) -> None:
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline:
        with sqlite3.connect(database) as connection:
            if connection.execute(f"SELECT COUNT(*) FROM {table}").fetchone()[0]:
                return
        time.sleep(0.05)
    raise AssertionError(f"no row in {table}")


def _scores(database: Path) -> list[int]:
    with sqlite3.connect(database) as connection:
        return [row[0] for row in connection.execute("SELECT score FROM feedback")]

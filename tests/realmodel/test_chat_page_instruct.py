"""The chat page (``GET /``) in Chromium on SmolLM2-135M-Instruct: a two-turn conversation, titled (issue 43).

What a newcomer sees after ``./scripts/serve.sh --local-model``, with sampling made deterministic
(temperature 0, llama-server's fixed seed) and docs/examples/local-model.toml's system prompt and
repeat penalty. The second question only makes sense after the first ("And what is JavaScript?"), and
the page sends the whole conversation, so the second answer shows the model followed it. Answers are
checked loosely: non-empty, and on topic by any of a few keywords, since another CPU's arithmetic may
pick other words. Measured here, on two numeric paths (the default, ``CHATGATE_LLAMA_FLASH_ATTENTION=off``):
"Python is an high-level, interpreted programming language ...", then "JavaScript is a high-level, dynamic
programming language with the official ECMAScript specification ...". The last step is saved as
tests/artifacts/page-local-model.png (docs/chat-page-local-model.png is one, in docs/chat-page.md). The
thread is kept on the server, as docs/examples/local-model.toml keeps it, so the model also writes its
title (docs/conversations.md#titles), and the list shows it.
"""

from __future__ import annotations

import asyncio
import sqlite3
import time
from pathlib import Path
from typing import Any

import pytest
from playwright.async_api import expect

from tests.browser import chromium, recorded_page
from tests.chat_page import assistants, open_page, send, wait_status
from tests.realmodel.conftest import llama_config
from tests.realmodel.llama import LlamaServer

# Two model calls of up to 64 tokens and a browser: well inside a minute idle, much more when loaded.
pytestmark = [pytest.mark.realmodel, pytest.mark.timeout(600)]

QUESTIONS = [
    ("What is Python?", ("python", "programming", "language", "code")),
    ("And what is JavaScript?", ("javascript", "script", "web", "browser")),
]
"""Each question and the words, any of which shows its answer is on topic."""
ANSWER_MS = 180_000
"""How long the page may take over one answer: 64 tokens at 50 a second idle, many times that when loaded."""


async def test_a_two_turn_conversation_follows_the_questions_and_titles_its_thread(
    serve: Any, smollm2: LlamaServer, tmp_path: Path
) -> None:
    database = tmp_path / "threads.db"
    config = llama_config(
        smollm2,
        "openai",
        max_tokens=64,
        extra={"repeat_penalty": 1.1},
        store={"url": f"sqlite:///{database}"},
        model="llama:smollm2",
        conversations="server",
        titles=True,
        system_prompt="You are a helpful assistant. Answer briefly.",
        description="SmolLM2-135M-Instruct on llama.cpp, on this machine.",
    )
    async with chromium() as browser, recorded_page(browser, "page-local-model", 1000, 760) as page:
        await open_page(page, serve(config))
        for turn, (question, topic) in enumerate(QUESTIONS):
            await send(page, question)
            answer = assistants(page).nth(turn)
            await expect(answer).to_be_visible()
            await page.wait_for_function(
                "s => document.querySelector('[data-testid=status]')?.textContent === s",
                arg="ready",
                timeout=ANSWER_MS,
            )
            text = (await answer.inner_text()).casefold()
            assert text.strip() and any(word in text for word in topic), (question, text)
        await wait_status(page, "ready")
        await expect(page.locator("[data-testid=message][data-role=user]")).to_have_count(2)
        # The thread's title, written by the model after the first answer, names it in the list.
        title = await _stored_title(database)
        assert title.strip(), "the model wrote an empty title"
        threads = page.get_by_role("navigation", name="Conversations")
        await expect(threads.get_by_role("button", name=title, exact=True)).to_be_visible(timeout=ANSWER_MS)


async def _stored_title(database: Path) -> str:
    """The one thread's title once written (its call runs after the first answer, on the same one slot)."""
    deadline = time.monotonic() + ANSWER_MS / 1000
    while time.monotonic() < deadline:
        with sqlite3.connect(database) as connection:
            row = connection.execute("SELECT title FROM threads").fetchone()
        if row is not None and row[0] is not None:
            return str(row[0])
        await asyncio.sleep(0.2)
    raise AssertionError("no title was written")

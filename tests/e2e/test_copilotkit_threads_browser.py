"""CopilotKit's thread list on chatgate, in headless Chromium with no Node process: restart, switch, people, replicas.

The page is tests/clients/copilotkit's build (``?threads=1``: ``useThreads`` beside ``CopilotChat``, each
listed thread a button that switches the chat to it; ``?key=`` the caller's key). chatgate runs as real
``chatgate serve`` processes on PostgreSQL (and Redis, shared by two replicas), so a restart is a new
process and a replica another one. Each test saves a screenshot of its last step in tests/artifacts/.
"""

from __future__ import annotations

import asyncio
import secrets
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from playwright.async_api import Browser, Page, expect

from tests.browser import recorded_page
from tests.conftest import ChatgateProcess
from tests.copilotkit_app import APP_DIR
from tests.e2e.test_copilotkit_browser import TIMEOUT_MS, assistant, built, send
from tests.processes import kill_tree
from tests.static_site import static_site
from tests.store.conftest import _create_database

__all__ = ["built"]

BASE = "/copilotkit"
KEYS = {"alice": "alice-key-0123456789", "bob": "bob-key-0123456789ab"}
WORDS = 60

pytestmark = pytest.mark.asyncio(loop_scope="module")


@pytest.fixture
def origin(built: None) -> Iterator[str]:
    """The page's own origin: the app's build on a static server."""
    with static_site(APP_DIR / "dist") as url:
        yield url


@pytest.fixture
def config(origin: str, postgres_url: str, redis_url: str, tmp_path: Path) -> Path:
    """A config on a new PostgreSQL database and the session's Redis: the default agent ``shop`` keeps
    threads and echoes a word every 50 ms; alice and bob each have a key."""
    name = f"ck_{secrets.token_hex(6)}"
    asyncio.run(_create_database(postgres_url, name))
    keys = "".join(f'[[keys]]\nid = "{who}"\nkey = "{key}"\n\n' for who, key in KEYS.items())
    path = tmp_path / "chatgate.toml"
    path.write_text(
        f'[server]\ncors_origins = ["{origin}"]\nredis_url = "{redis_url}"\n\n'
        f'[store]\nurl = "{postgres_url.rsplit("/", 1)[0]}/{name}"\n\n'
        f'[copilotkit]\npath = "{BASE}"\n\n{keys}'
        '[agents.shop]\nmodel = "builtin:echo"\nconversations = "server"\ndefault = true\n'
        "model_settings = { delay = 0.05 }\n"
    )
    return path


def _auth(who: str) -> dict[str, str]:
    return {"authorization": f"Bearer {KEYS[who]}"}


async def _open(page: Page, origin: str, url: str, who: str, extra: str = "") -> None:
    page.set_default_timeout(TIMEOUT_MS)
    await page.goto(f"{origin}/index.html?runtime={url}{BASE}&key={KEYS[who]}{extra}", wait_until="networkidle")
    await page.get_by_test_id("copilot-chat-textarea").wait_for()


async def _turn(browser: Browser, origin: str, url: str, text: str) -> None:
    """alice asks ``text`` on a page of its own (a new CopilotKit thread) and waits for the whole answer."""
    async with recorded_page(browser, f"copilotkit-threads-{text}", 900, 700) as page:
        await _open(page, origin, url, "alice")
        await send(page, text)
        await expect(assistant(page).last).to_contain_text(f"Last user message: {text}", timeout=TIMEOUT_MS)


async def _listed(page: Page) -> list[str]:
    await expect(page.get_by_test_id("thread-list")).to_have_attribute("data-loading", "false")
    return [text.strip() for text in await page.get_by_test_id("thread-item").all_inner_texts()]


async def test_the_thread_list_survives_a_restart_switches_threads_and_is_alices_alone(
    browser: Browser, chatgate_process: ChatgateProcess, config: Path, origin: str
) -> None:
    url, process = chatgate_process("--config", str(config))
    await _turn(browser, origin, url, "apple")
    await _turn(browser, origin, url, "banana")
    kill_tree(process)  # no drain: what the list shows next comes from PostgreSQL alone
    url, _ = chatgate_process("--config", str(config))
    async with recorded_page(browser, "copilotkit-threads-switch", 900, 700) as page:
        await _open(page, origin, url, "alice", "&threads=1")
        await expect(page.get_by_test_id("thread-item")).to_have_count(2)
        assert await _listed(page) == ["banana", "apple"]  # most recent first, named by the first question
        await page.get_by_test_id("thread-item").filter(has_text="apple").click()
        await expect(assistant(page)).to_have_count(1)
        await expect(assistant(page).last).to_contain_text("Last user message: apple")
        await page.get_by_test_id("thread-item").filter(has_text="banana").click()
        await expect(assistant(page).last).to_contain_text("Last user message: banana")
        await expect(page.get_by_test_id("copilot-user-message")).to_have_count(1)
        await expect(page.get_by_test_id("copilot-user-message")).to_contain_text("banana")
        # Rename and archive through useThreads: chatgate's own list shows what the runtime routes wrote.
        apple = page.get_by_test_id("thread-item").filter(has_text="apple")
        await page.locator("li", has=apple).get_by_test_id("thread-rename").click()
        await expect(page.get_by_test_id("thread-item").filter(has_text="renamed apple")).to_have_count(1)
        banana = page.locator("li", has=page.get_by_test_id("thread-item").filter(has_text="banana"))
        await banana.get_by_test_id("thread-archive").click()
        await expect(page.get_by_test_id("thread-item")).to_have_count(1)
    own = httpx.get(f"{url}/agents/shop/threads", headers=_auth("alice"), timeout=30).json()["threads"]
    assert {(t["title"], t["archived"]) for t in own} == {("renamed apple", False), ("banana", True)}
    async with recorded_page(browser, "copilotkit-threads-bob", 900, 700) as page:
        await _open(page, origin, url, "bob", "&threads=1")
        assert await _listed(page) == []  # alice's threads are none of bob's
    async with recorded_page(browser, "copilotkit-threads-single", 900, 700) as page:
        # The single-route transport lists through the same REST paths: /info offers no resource envelopes.
        await _open(page, origin, url, "alice", "&threads=1&single=1")
        assert await _listed(page) == ["renamed apple"]  # the archived one left out, as the runtime does


async def test_a_run_on_one_replica_is_reconnected_through_the_other(
    browser: Browser, chatgate_process: ChatgateProcess, config: Path, origin: str
) -> None:
    (url_a, _), (url_b, _) = chatgate_process("--config", str(config)), chatgate_process("--config", str(config))
    words = " ".join(f"w{n}" for n in range(WORDS))
    async with recorded_page(browser, "copilotkit-threads-replicas", 900, 700) as page:
        await _open(page, origin, url_a, "alice", "&thread=t-replicas")
        await send(page, words)
        await expect(assistant(page).last).to_contain_text("Last user message: w0", timeout=TIMEOUT_MS)
        thread = httpx.get(f"{url_b}/agents/shop/threads/t-replicas", headers=_auth("alice"), timeout=30).json()
        assert thread["running"]  # mid-answer, as B sees it in the shared store
        # The page comes back through the other replica: its connect follows A's run in Redis.
        seen: list[str] = []
        page.on("request", lambda request: seen.append(request.url))
        await _open(page, origin, url_b, "alice", "&thread=t-replicas")
        await expect(assistant(page).last).to_contain_text(f"Last user message: {words}", timeout=TIMEOUT_MS)
        await expect(assistant(page)).to_have_count(1)
        await expect(page.get_by_test_id("copilot-user-message")).to_have_count(1)
        assert (await assistant(page).last.inner_text()).count(f"w{WORDS - 1}") == 1
    assert any(u.startswith(f"{url_b}{BASE}/agent/") for u in seen) and not any(u.startswith(url_a) for u in seen)

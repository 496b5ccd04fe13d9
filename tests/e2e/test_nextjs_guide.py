"""docs/nextjs.md as written: its files built as a create-next-app project, driven in Chromium (issue 43).

The guide's code blocks that name their path on their first line are written into a project made of
what create-next-app 16.4.3 generates (tests/nextjs/: its tsconfig.json and next.config.ts with
``cacheComponents``; its layout without the Google fonts a build would download; its dependencies with
ai 6 or ai 7 added, in ai6/ and ai7/, from npm by their lock files) and a one-person ``auth.ts``. ``next build`` and
``next start`` run it against a live chatgate on the echo model, and a person named ``Zoë 张伟`` (not
ASCII: the header the guide sends must be) has a turn, stops a long answer (the run ends on chatgate,
not only in the tab), reloads mid-answer (the stored messages show and the answer streams on) and meets a
refusal shown in chatgate's words. So the guide cannot drift from what works.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

import httpx
import pytest
from playwright.async_api import Page, expect

from tests.browser import recorded_page
from tests.conftest import make_config
from tests.processes import stop_process
from tests.servers import _free_port as free_port
from tests.servers import _wait_for_port

GUIDE = Path(__file__).parents[2] / "docs/nextjs.md"
TEMPLATE = Path(__file__).parents[1] / "nextjs"
TEMPLATE_FILES = ["tsconfig.json", "next.config.ts", "auth.ts", "app/layout.tsx"]
MAJORS = ["6", "7"]
"""The ``ai`` majors; ai 7 declares Node 22, but in this app it runs in the browser, and builds on Node 20."""
PERSON = "Zoë 张伟"
KEY = "nextjs-guide-key-0123456789"
BUILD_SECONDS = 480  # 45 s idle here; several times that on a loaded 2-core machine
START_SECONDS = 60
WORD_SECONDS = 0.3
"""The echo model's pause before each word: an answer of LONG streams for about ten seconds."""
LONG = " ".join(f"word{n}" for n in range(1, 31))
LAST = "word30"

pytestmark = [pytest.mark.asyncio(loop_scope="module"), pytest.mark.timeout(900)]


def guide_files(text: str) -> dict[str, str]:
    """Each ``ts``/``tsx`` code block of the guide whose first line is ``// PATH: ...``, by path."""
    blocks = re.findall(r"^```tsx?\n(// ([\w./\[\]-]+): .*?)^```$", text, re.MULTILINE | re.DOTALL)
    return {path: body for body, path in blocks}


def _next(project: Path, *args: str) -> list[str]:
    return ["node", str(project / "node_modules/next/dist/bin/next"), *args]


@pytest.fixture(scope="module", params=MAJORS, ids=[f"ai{major}" for major in MAJORS])
def built_app(request: pytest.FixtureRequest) -> tuple[str, Path]:
    """The guide's files in create-next-app's project on one ``ai`` major, built with ``next build``.

    The build folder is inside that major's project, so that Next's workspace root (the folder of the
    nearest lock file) holds its node_modules.
    """
    major: str = request.param
    project = TEMPLATE / f"ai{major}"
    if not (project / "node_modules/next").is_dir():
        pytest.fail(f"{project}/node_modules is missing: run scripts/test.sh, which installs it")
    build = project / "build"
    shutil.rmtree(build, ignore_errors=True)
    (build / "app").mkdir(parents=True)
    shutil.copy(project / "package.json", build / "package.json")
    for name in TEMPLATE_FILES:
        shutil.copy(TEMPLATE / name, build / name)
    files = guide_files(GUIDE.read_text())
    assert sorted(files) == [
        "app/api/chat/[id]/stop/route.ts",
        "app/api/chat/[id]/stream/route.ts",
        "app/api/chat/route.ts",
        "app/chat/[id]/chat.tsx",
        "app/chat/[id]/page.tsx",
        "app/page.tsx",
        "lib/chatgate.ts",
    ]
    for path, body in files.items():
        (build / path).parent.mkdir(parents=True, exist_ok=True)
        (build / path).write_text(body)
    env = {**os.environ, "NEXT_TELEMETRY_DISABLED": "1"}
    command = _next(project, "build")
    built = subprocess.run(command, cwd=build, env=env, capture_output=True, text=True, timeout=BUILD_SECONDS)
    assert built.returncode == 0, f"next build failed:\n{built.stdout[-6000:]}\n{built.stderr[-4000:]}"
    return major, build


def _chatgate(tmp_path: Path, major: str) -> Any:
    agent = {
        "model": "builtin:echo",
        "default": True,
        "system_prompt": "You are the support assistant.",
        "conversations": "server",
        "vercel_ai_version": f"v{major}",  # the app's ai major, as the guide says
        "model_settings": {"delay": WORD_SECONDS},
    }
    return make_config(
        {"support": agent},
        server={"max_text_chars": 300},
        store={"url": f"sqlite:///{tmp_path / 'threads.db'}"},
        keys=[{"id": "nextjs", "key": KEY, "agents": ["support"], "trusted_user_header": True}],
    )


@pytest.fixture
def next_app(built_app: tuple[str, Path], serve: Any, tmp_path: Path) -> Iterator[tuple[str, str]]:
    """``next start`` of the built app, forwarding to a live chatgate: ``(app URL, chatgate URL)``."""
    major, build = built_app
    chatgate = serve(_chatgate(tmp_path, major))
    port = free_port()
    env = {
        **os.environ,
        "CHATGATE_URL": chatgate,
        "CHATGATE_NEXTJS_KEY": KEY,
        "DEMO_USER_ID": PERSON,
        "NEXT_TELEMETRY_DISABLED": "1",
    }
    log = tmp_path / "next.log"
    with log.open("wb") as output:
        command = _next(build.parent, "start", "-p", str(port), "-H", "127.0.0.1")
        process = subprocess.Popen(command, cwd=build, env=env, stdout=output, stderr=output)
    try:
        _wait_for_port(port, process, "next start", START_SECONDS)
        yield f"http://127.0.0.1:{port}", chatgate
    finally:
        stop_process(process)


def _thread(chatgate: str, thread: str) -> dict[str, Any]:
    """The person's thread as chatgate holds it, read with the app's key and the header the guide sends."""
    headers = {"authorization": f"Bearer {KEY}", "x-chatgate-user": quote(PERSON, safe="")}
    response = httpx.get(f"{chatgate}/agents/support/threads/{thread}", headers=headers, timeout=10)
    assert response.status_code == 200, response.text
    result: dict[str, Any] = response.json()
    return result


async def _ended(page: Page, chatgate: str, thread: str) -> None:
    """Wait until chatgate holds no running run on ``thread``."""
    deadline = time.monotonic() + 60
    while _thread(chatgate, thread)["running"]:
        assert time.monotonic() < deadline, "the run is still going on chatgate"
        await page.wait_for_timeout(200)


async def _send(page: Page, text: str) -> None:
    await page.get_by_label("Message").fill(text)
    await page.get_by_role("button", name="Send").click()


async def test_the_guide_builds_and_chats_stops_resumes_and_shows_refusals(
    browser: Any, next_app: tuple[str, str], request: pytest.FixtureRequest
) -> None:
    url, chatgate = next_app
    async with recorded_page(browser, f"nextjs-{request.node.name}", 1000, 760) as page:
        page.set_default_timeout(30_000)
        await page.goto(f"{url}/")
        await page.wait_for_url(re.compile(r"/chat/[0-9a-f-]{36}$"))  # a new conversation's id, from the server
        thread = page.url.rsplit("/", 1)[1]
        answers = page.locator("main [data-role=assistant]")

        await _send(page, "hello there")
        await expect(answers.nth(0)).to_contain_text("Last user message: hello there")
        await expect(page.get_by_role("button", name="Send")).to_be_enabled()

        await _send(page, LONG)  # Stop, mid-answer: the run ends on chatgate too
        await expect(answers.nth(1)).to_contain_text("Last user message:")
        await page.get_by_role("button", name="Stop").click()
        await _ended(page, chatgate, thread)
        assert LAST not in await answers.nth(1).inner_text()

        await _send(page, LONG.replace(LAST, "final"))  # a reload mid-answer resumes it
        await expect(answers.nth(2)).to_contain_text("Last user message:")
        await page.reload()
        await expect(page.locator("main [data-role=user]").nth(0)).to_contain_text("hello there")  # stored
        await expect(answers.nth(2)).to_contain_text("final")  # the answer went on after the reload
        await _ended(page, chatgate, thread)
        # the stopped answer as chatgate stored it: cut where Stop ended the run, not finished detached
        stored = await answers.nth(1).inner_text()
        assert "Last user message:" in stored and LAST not in stored, stored

        await _send(page, "x" * 400)  # refused by chatgate: its message, not its JSON
        alert = page.locator("main [role=alert]")
        await expect(alert).to_have_text("400 characters of text: more than [server] max_text_chars = 300")

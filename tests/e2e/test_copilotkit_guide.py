"""docs/copilotkit.md's own React snippets, built with the pinned CopilotKit packages and driven in Chromium.

The guide cannot drift from what works: its ```jsx blocks are read from the doc and put, as written, into a
page (the ``runtimeUrl`` snippet in a ``Guide`` component, the app with a frontend tool and an approval as
its ``App``), only their URLs swapped for the test's. The page is built with Vite from the CopilotKit test
app's installed packages (tests/clients/copilotkit) and served from a second origin; its ``runtimeUrl`` is
chatgate's ``[copilotkit] path``, with no Node process between. The ``runtimeUrl`` snippet sends its
``headers`` to a chatgate that requires a key, so a turn proves the key reaches chatgate.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path

import pytest
import pytest_asyncio
from playwright.async_api import Browser, Page, expect

from chatgate.config import Config
from tests.browser import recorded_page
from tests.conftest import make_config
from tests.copilotkit_app import APP_DIR
from tests.e2e.test_copilotkit_browser import TIMEOUT_MS, assistant, send
from tests.static_site import static_site

Serve = Callable[[Config], str]
ROOT = Path(__file__).parent.parent.parent
GUIDE = ROOT / "docs" / "copilotkit.md"
BASE = "/copilotkit"
KEY = "sk-guide-key-of-enough-length"
BUILD_SECONDS = 300

pytestmark = pytest.mark.asyncio(loop_scope="module")

PAGE = """\
import React from "react";
import { createRoot } from "react-dom/client";

{app}

const query = new URLSearchParams(window.location.search);
const token = query.get("token");

function Guide() {
  return (
{provider}
  );
}

createRoot(document.getElementById("root")).render(query.get("page") === "app" ? <App /> : <Guide />);
"""


def guide_blocks(language: str) -> list[str]:
    """The doc's fenced blocks in ``language``, in order."""
    return re.findall(rf"^```{language}\n(.*?)^```", GUIDE.read_text(), flags=re.M | re.S)


def guide_page() -> str:
    """The page's source: the guide's app module and ``runtimeUrl`` snippet, their URLs read from the query."""
    blocks = guide_blocks("jsx")
    (provider,) = [block for block in blocks if block.startswith("<CopilotKitProvider runtimeUrl=")]
    (app,) = [block for block in blocks if "export function App()" in block]
    provider, swapped = re.subn(r'runtimeUrl="https://[^"]+"', 'runtimeUrl={query.get("runtime")}', provider)
    assert swapped == 1, "the guide's runtimeUrl snippet names chatgate's URL"
    app, swapped = re.subn(r'runtimeUrl="/api/copilotkit"', 'runtimeUrl={query.get("runtime")}', app)
    assert swapped == 1, "the guide's app names its runtime's URL"
    return PAGE.replace("{app}", app.strip()).replace("{provider}", provider.rstrip())


@pytest.fixture(scope="module")
def guide_dist(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The guide's page, built with Vite from the CopilotKit test app's packages."""
    if not (APP_DIR / "node_modules").is_dir():
        pytest.fail(f"{APP_DIR}/node_modules is missing: run scripts/test.sh, which installs it")
    root = tmp_path_factory.mktemp("copilotkit-guide")
    (root / "src").mkdir()
    (root / "src" / "main.jsx").write_text(guide_page())
    shutil.copy(APP_DIR / "index.html", root / "index.html")
    (root / "node_modules").symlink_to(APP_DIR / "node_modules")
    build = (
        'import { build } from "vite";\n'
        "await build({ root: process.cwd(), base: './', configFile: false, logLevel: 'error',"
        " build: { outDir: 'dist', chunkSizeWarningLimit: 100000 } });\n"
    )
    (root / "build.mjs").write_text(build)
    done = subprocess.run(
        ["node", "build.mjs"], cwd=root, capture_output=True, text=True, timeout=BUILD_SECONDS, check=False
    )
    assert done.returncode == 0, f"the guide's snippets do not build:\n{done.stderr}\n{done.stdout}"
    return root / "dist"


@pytest.fixture
def origin(guide_dist: Path) -> Iterator[str]:
    with static_site(guide_dist) as origin:
        yield origin


def _chatgate(serve: Serve, origin: str, **top: object) -> str:
    add = {"function": "tests.sample_tools:add", "requires_approval": True}
    agent = {"model": "builtin:echo", "default": True, "tools": {"add": add}}
    server = {"cors_origins": [origin], "approval_secret": "a-secret-of-enough-length"}
    return serve(make_config({"support": agent}, server=server, copilotkit={"path": BASE}, **top))


@pytest_asyncio.fixture(loop_scope="module")
async def page(browser: Browser, request: pytest.FixtureRequest) -> AsyncIterator[Page]:
    async with recorded_page(browser, f"copilotkit-guide-{request.node.name}", 900, 800) as page:
        page.set_default_timeout(TIMEOUT_MS)
        yield page


async def _open(page: Page, url: str) -> None:
    await page.goto(url, wait_until="networkidle")
    await page.get_by_test_id("copilot-chat-textarea").wait_for()


async def test_the_runtime_url_snippet_streams_a_turn_with_its_key(page: Page, serve: Serve, origin: str) -> None:
    chatgate = _chatgate(serve, origin, keys=[{"id": "web", "key": KEY}])
    await _open(page, f"{origin}/index.html?runtime={chatgate}{BASE}&token={KEY}")
    await send(page, "hello from the guide")
    await expect(assistant(page).last).to_contain_text("Last user message: hello from the guide")


async def test_the_guides_app_runs_its_frontend_tool_and_its_approval(page: Page, serve: Serve, origin: str) -> None:
    chatgate = _chatgate(serve, origin)
    await _open(page, f"{origin}/index.html?page=app&runtime={chatgate}{BASE}")
    await send(page, '/call pick_color {"palette": "warm"}')
    await expect(assistant(page).last).to_contain_text(re.compile(r"Tool results: \S+ returned: red"))
    await send(page, '/call add {"a": 2, "b": 3}')
    await expect(page.get_by_text("Approve the call to add?")).to_be_visible()
    await page.get_by_role("button", name="Approve").click()
    await expect(assistant(page).last).to_contain_text(re.compile(r"Tool results: \S+ returned: 5"))

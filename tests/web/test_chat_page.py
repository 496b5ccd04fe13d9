"""``GET /`` serves the chat page from the package: the right files and headers, off when configured off."""

from __future__ import annotations

import subprocess
import sys
import zipfile
from collections.abc import Callable
from pathlib import Path

import httpx
import pytest

from chatgate.config import Config
from chatgate.web.chat_page import PAGE_FILES, page_file
from tests.conftest import make_config

Serve = Callable[[Config], str]
ROOT = Path(__file__).parents[2]
PAGE_SOURCE = ROOT / "tests" / "clients" / "page"


def _config(**server: object) -> Config:
    return make_config({"bot": {"model": "builtin:echo"}}, server=server)


def test_the_page_and_its_files_are_served_with_a_strict_policy(serve: Serve) -> None:
    url = serve(_config())
    page = httpx.get(f"{url}/")
    assert page.status_code == 200
    assert page.headers["content-type"] == "text/html; charset=utf-8"
    policy = page.headers["content-security-policy"]
    assert "script-src 'self'" in policy and "default-src 'none'" in policy and "connect-src 'self'" in policy
    assert page.headers["x-content-type-options"] == "nosniff"
    assert '<script type="module" src="static/chat.js">' in page.text
    script = httpx.get(f"{url}/static/chat.js")
    assert script.headers["content-type"] == "text/javascript; charset=utf-8"
    assert script.content == (ROOT / "app" / "static" / "chat.js").read_bytes()
    assert httpx.get(f"{url}/static/chat.css").headers["content-type"] == "text/css; charset=utf-8"


@pytest.mark.parametrize("path", ["/static/index.html", "/static/../server.py", "/static/nope.js", "/static/"])
def test_nothing_else_is_served(serve: Serve, path: str) -> None:
    response = httpx.get(f"{serve(_config())}{path}")
    assert response.status_code == 404
    assert response.json()["error"]["code"] == "not_found"


def test_chat_page_false_turns_it_off(serve: Serve) -> None:
    url = serve(_config(chat_page=False))
    for path in ("/", "/static/chat.js", "/static/chat.css"):
        response = httpx.get(f"{url}{path}")
        assert response.status_code == 404
        assert response.json()["error"] == {
            "code": "not_found",
            "message": "the chat page is turned off ([server] chat_page = false)",
        }
    assert httpx.get(f"{url}/agents").status_code == 200


def test_the_page_needs_nothing_from_another_origin() -> None:
    html = page_file("index.html").decode()
    css = page_file("chat.css").decode()
    assert "http:" not in html + css and "https:" not in html + css and "//" not in html
    assert "<script>" not in html  # no inline script: the policy would refuse it


def test_the_package_resources_hold_the_page() -> None:
    for name in PAGE_FILES:
        assert page_file(name) == (ROOT / "app" / "static" / name).read_bytes()


def test_a_built_wheel_ships_the_page(tmp_path: Path) -> None:
    completed = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", str(ROOT), "--no-deps", "-q", "-w", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert completed.returncode == 0, completed.stderr
    (wheel,) = tmp_path.glob("chatgate-*.whl")
    with zipfile.ZipFile(wheel) as archive:
        for name in PAGE_FILES:
            assert archive.read(f"chatgate/static/{name}") == (ROOT / "app" / "static" / name).read_bytes()


def test_the_checked_in_bundle_is_what_its_source_builds() -> None:
    if not (PAGE_SOURCE / "node_modules").is_dir():
        pytest.fail("tests/clients/page/node_modules is missing: run scripts/build-page.sh (scripts/test.sh does)")
    completed = subprocess.run(
        ["node", str(PAGE_SOURCE / "build.mjs"), "--check"], capture_output=True, text=True, timeout=120, check=False
    )
    assert completed.returncode == 0, completed.stderr

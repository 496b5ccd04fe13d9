"""The markers tests/markers.py applies: ``-m "not browser"`` leaves out exactly the files that drive Chromium."""

import subprocess
import sys
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).parent.parent


def marked() -> dict[str, set[str]]:
    """Each marker's test files, from one collection of the whole suite (tests/marker_report.py)."""
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider", "-p", "tests.marker_report"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    )
    files: dict[str, set[str]] = defaultdict(set)
    for line in done.stdout.splitlines():
        if line.startswith("MARKS "):
            _, path, marks = line.split()
            files["all"].add(path)
            for mark in marks.split(","):
                files[mark].add(path)
    return files


def test_each_marker_selects_the_files_that_need_its_part() -> None:
    files = marked()
    playwright = {
        str(path.relative_to(ROOT))
        for path in (ROOT / "tests").rglob("test_*.py")
        if "playwright" in path.read_text() or "from tests.browser import" in path.read_text()
    }
    assert files["browser"] == playwright  # -m "not browser" leaves out these and nothing else
    assert {"tests/e2e/test_chat_page_browser.py", "tests/e2e/test_chat_page_mounted.py"} <= files["browser"]
    assert {"tests/web/test_embedding.py", "tests/e2e/test_ag_ui_client.py"} <= files["node"]
    assert "tests/test_servers.py" in files["postgres"]
    assert "tests/web/test_readiness.py" in files["redis"]
    assert "tests/test_kubernetes.py" in files["-"]  # needs none of them

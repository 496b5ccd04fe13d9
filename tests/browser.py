"""Headless Chromium for browser tests: Debian's package, driven by Playwright with its path set.

Playwright's own browser download is not possible here, so every launch names ``/usr/bin/chromium``
(installed by ``scripts/test-system-packages.sh``) and turns off the background connections a closed
network would refuse.
"""

from __future__ import annotations

import shutil
from pathlib import Path

__all__ = ["ARTIFACTS_DIR", "CHROMIUM_ARGS", "chromium_path"]

CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]

ARTIFACTS_DIR = Path(__file__).parent / "artifacts"
"""Screenshots of each browser test's last step (ignored by git; CI keeps the folder)."""


def chromium_path() -> str:
    """The system Chromium; a clear failure (never a skip) when it is missing."""
    path = shutil.which("chromium")
    if path is None:
        raise RuntimeError("chromium is not installed: run ./scripts/test.sh, which installs it")
    return path

"""The CopilotKit test app (tests/clients/copilotkit): its Vite build and its Node runtime server.

``build_copilotkit_app`` builds the page when its sources changed (a no-op otherwise).
``copilotkit_runtime(ag_ui_url)`` starts ``server.mjs`` on loopback: ``@copilotkit/runtime`` with an
``HttpAgent`` pointed at chatgate's AG-UI route under ``/api/copilotkit``, and the built page on the
same origin, as a CopilotKit deployment has it. CopilotKit's telemetry is switched off (no network).
"""

from __future__ import annotations

import json
import os
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from tests.browser import build_app
from tests.processes import kill_tree

APP_DIR = Path(__file__).parent / "clients" / "copilotkit"
QUIET = {"COPILOTKIT_TELEMETRY_DISABLED": "true", "DO_NOT_TRACK": "1", "SCARF_ANALYTICS": "false"}


def build_copilotkit_app() -> None:
    """Build the page into tests/clients/copilotkit/dist (skipped when unchanged)."""
    build_app(APP_DIR, "CopilotKit", timeout=300)


@contextmanager
def copilotkit_runtime(ag_ui_url: str) -> Iterator[str]:
    """Run the CopilotKit runtime for ``ag_ui_url``; yields the page's URL. Stopped on exit."""
    with tempfile.TemporaryFile("w+") as log:  # a file, not a pipe: a chatty runtime never blocks
        process = subprocess.Popen(
            ["node", str(APP_DIR / "server.mjs"), ag_ui_url],
            stdout=subprocess.PIPE,
            stderr=log,
            text=True,
            env={**os.environ, **QUIET},
        )
        assert process.stdout is not None
        with process.stdout:
            try:
                line = process.stdout.readline()
                if not line:
                    log.seek(0)
                    pytest.fail(f"the CopilotKit runtime did not start:\n{log.read()}")
                yield str(json.loads(line)["url"])
            finally:
                kill_tree(process)

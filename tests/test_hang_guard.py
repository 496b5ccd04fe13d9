"""tests/hang_guard.py: a test pytest-timeout cannot end fails with its stacks, and the run still ends."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).parent.parent


def test_a_test_past_its_timeout_and_grace_fails_with_its_stacks_and_the_run_goes_on() -> None:
    run = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-n",
            "2",
            "-p",
            "no:cacheprovider",
            "-o",
            "timeout=1",
            "tests/hung_test_target.py",
        ],
        cwd=ROOT,
        env={**os.environ, "CHATGATE_TEST_HANG_GRACE": "2"},
        capture_output=True,
        text=True,
        timeout=100,
    )
    out = run.stdout + run.stderr
    assert run.returncode == 1, out
    assert "hang guard: tests/hung_test_target.py::test_stuck_where_the_timeout_cannot_reach still running" in out
    assert "in test_stuck_where_the_timeout_cannot_reach" in out  # its stack
    assert "1 failed, 1 passed" in out, out

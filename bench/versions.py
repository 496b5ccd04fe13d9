"""Another revision of chatgate, installed beside the working tree, for ``compare.py``'s ``versions`` scenario.

    .venv/bin/python bench/versions.py [REVISION]   # install it now (compare.py does when it needs it)

The revision's files (``git archive``) go to ``bench/.base/REVISION/`` with a venv of their own, which
gets the revision installed editable and every other package at the version this checkout's venv has
(``pip freeze`` as constraints): the two servers then differ in chatgate's code alone, not in
Starlette's or uvicorn's. The revision is served by its own ``bench/serve.py``, as it was benchmarked
then. ``bench/.base/`` is ignored by git; delete it to reinstall.
"""

from __future__ import annotations

import io
import subprocess
import sys
import tarfile
from dataclasses import dataclass
from pathlib import Path

from harness import BENCH_DIR, ROOT

BASE_REVISION = "aba826a"
"""Issue 39's base: the default path's CPU per event before the stage that added usage, the drain and metrics."""
BASE_DIR = BENCH_DIR / ".base"


@dataclass(frozen=True)
class Installed:
    """One revision ready to serve: its files and its venv's interpreter."""

    revision: str
    root: Path
    python: Path

    def serve_command(self, config: Path) -> list[str]:
        """The command serving chatgate from ``config`` at this revision (prints its port first)."""
        return [str(self.python), str(self.root / "bench" / "serve.py"), "chatgate", str(config)]


def install(revision: str = BASE_REVISION) -> Installed:
    """``revision`` unpacked and installed under ``bench/.base/`` (once; later calls find it)."""
    root = BASE_DIR / revision
    python = root / ".venv" / "bin" / "python"
    done = root / ".installed"
    if not done.exists():
        print(f"installing chatgate {revision} into {root} (once)", flush=True)
        archive = subprocess.run(["git", "archive", revision], cwd=ROOT, capture_output=True, check=True).stdout
        root.mkdir(parents=True, exist_ok=True)
        with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
            tar.extractall(root, filter="data")
        constraints = root / "constraints.txt"
        frozen = subprocess.run(
            [sys.executable, "-m", "pip", "freeze", "--exclude-editable"], capture_output=True, text=True, check=True
        ).stdout
        constraints.write_text(frozen)
        subprocess.run([sys.executable, "-m", "venv", "--clear", str(root / ".venv")], check=True)
        pip = [str(python), "-m", "pip", "install", "-q", "-c", str(constraints), "-e", str(root)]
        subprocess.run(pip, check=True)
        done.touch()
    return Installed(revision, root, python)


if __name__ == "__main__":
    print(install(*sys.argv[1:2]).python)

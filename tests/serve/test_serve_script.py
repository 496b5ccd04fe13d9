"""``scripts/serve.sh`` installs only when it must: no .venv, or a changed pyproject.toml.

The script runs in a copy of the repository's layout whose ``python3`` (first on PATH) makes a fake
venv: its ``python`` logs every pip call and its ``chatgate`` prints the arguments it was given, so the
test counts installs without touching PyPI.
"""

import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).parents[2] / "scripts" / "serve.sh"

FAKE_PYTHON3 = f"""#!/usr/bin/env bash
# -m venv DIR: a venv whose python logs pip calls and whose chatgate echoes its arguments
if [ "$1" = "-m" ] && [ "$2" = "venv" ]; then
    mkdir -p "$3/bin"
    printf '#!/usr/bin/env bash\\necho "$@" >> "$PIP_LOG"\\n' > "$3/bin/python"
    printf '#!/usr/bin/env bash\\necho "chatgate $*"\\n' > "$3/bin/chatgate"
    chmod +x "$3/bin/python" "$3/bin/chatgate"
    echo venv >> "$PIP_LOG"
    exit 0
fi
exec {sys.executable} "$@"
"""


def executable(path: Path, text: str) -> None:
    path.write_text(text)
    path.chmod(path.stat().st_mode | stat.S_IXUSR)


def run(repo: Path, bin_dir: Path, log: Path) -> str:
    env = {**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}", "PIP_LOG": str(log)}
    completed = subprocess.run(
        [str(repo / "scripts" / "serve.sh"), "--port", "9"],
        env=env,
        capture_output=True,
        text=True,
        timeout=30,
        check=True,
    )
    return completed.stdout.strip()


def test_serve_sh_installs_once_then_again_only_when_pyproject_changes(tmp_path: Path) -> None:
    repo, bin_dir, log = tmp_path / "repo", tmp_path / "bin", tmp_path / "pip.log"
    (repo / "scripts").mkdir(parents=True)
    bin_dir.mkdir()
    shutil.copy(SCRIPT, repo / "scripts" / "serve.sh")
    (repo / "pyproject.toml").write_text('[project]\nname = "chatgate"\n')
    executable(bin_dir / "python3", FAKE_PYTHON3)

    def installs() -> int:
        return log.read_text().count("pip install --quiet -e .") if log.exists() else 0

    assert run(repo, bin_dir, log) == "chatgate serve --port 9"
    assert (log.read_text().splitlines()[0], installs()) == ("venv", 1)
    assert run(repo, bin_dir, log) == "chatgate serve --port 9"
    assert installs() == 1  # a second start reinstalls nothing
    (repo / "pyproject.toml").write_text('[project]\nname = "chatgate"\nversion = "2"\n')
    run(repo, bin_dir, log)
    assert installs() == 2
    shutil.rmtree(repo / ".venv")
    run(repo, bin_dir, log)
    assert (log.read_text().count("venv\n"), installs()) == (2, 3)

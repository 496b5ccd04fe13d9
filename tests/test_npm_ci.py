"""scripts/npm-ci.sh: ``npm ci`` once per lock file, so a second ``scripts/test.sh`` installs nothing."""

import json
import subprocess
from pathlib import Path

ROOT = Path(__file__).parent.parent


def npm_ci(folder: Path) -> None:
    subprocess.run(["bash", str(ROOT / "scripts/npm-ci.sh"), str(folder)], check=True, capture_output=True)


def project(folder: Path) -> Path:
    """A Node project with one local dependency (no registry needed), its lock file made by npm itself."""
    (folder / "dep").mkdir()
    (folder / "dep/package.json").write_text(json.dumps({"name": "dep", "version": "1.0.0"}))
    package = {"name": "app", "version": "1.0.0", "dependencies": {"dep": "file:dep"}}
    (folder / "package.json").write_text(json.dumps(package))
    subprocess.run(
        ["npm", "install", "--package-lock-only", "--offline", "--no-audit", "--no-fund"], cwd=folder, check=True
    )
    return folder / "node_modules"


def test_an_unchanged_lock_installs_nothing_and_a_changed_or_missing_install_is_redone(tmp_path: Path) -> None:
    modules = project(tmp_path)
    npm_ci(tmp_path)
    assert (modules / "dep/package.json").is_file()
    (modules / "kept").touch()  # npm ci would delete it with the rest of node_modules

    npm_ci(tmp_path)
    assert (modules / "kept").exists()

    lock = tmp_path / "package-lock.json"
    lock.write_text(lock.read_text() + "\n")  # a pull or a branch switch changed the lock
    npm_ci(tmp_path)
    assert not (modules / "kept").exists() and (modules / "dep/package.json").is_file()

    subprocess.run(["rm", "-rf", str(modules)], check=True)
    npm_ci(tmp_path)
    assert (modules / "dep/package.json").is_file()

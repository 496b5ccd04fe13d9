"""The install puts chatgate under one import name, and lists every subpackage of app/ and adapters/."""

import shutil
import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).parent.parent


def _folders_as_packages() -> set[str]:
    found = set()
    for top, name in (("app", "chatgate"), ("adapters", "chatgate.adapters")):
        for init in (ROOT / top).rglob("__init__.py"):
            parts = init.parent.relative_to(ROOT / top).parts
            found.add(".".join((name, *parts)))
    return found


def test_every_folder_with_an_init_is_an_installed_package() -> None:
    setuptools = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    assert set(setuptools["packages"]) == _folders_as_packages()
    assert setuptools["package-dir"] == {"chatgate": "app", "chatgate.adapters": "adapters"}


def test_entry_points_name_the_installed_package() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert project["scripts"] == {"chatgate": "chatgate.serve.cli:main"}
    targets = project["entry-points"]["chatgate.protocols"].values()
    assert all(target.startswith("chatgate.adapters.") for target in targets)


def test_the_wheel_builds_without_a_warning_and_holds_every_module_and_the_chat_page(tmp_path: Path) -> None:
    pytest.importorskip("setuptools", minversion="77", reason="pip install -e '.[test]' brings setuptools>=77")
    source = tmp_path / "source"
    source.mkdir()
    for name in ("pyproject.toml", "README.md", "LICENSE"):
        shutil.copy(ROOT / name, source / name)
    for name in ("app", "adapters"):
        shutil.copytree(ROOT / name, source / name, ignore=shutil.ignore_patterns("__pycache__"))
    build = "from setuptools import build_meta; print(build_meta.build_wheel('../wheel'))"
    done = subprocess.run([sys.executable, "-W", "error", "-c", build], cwd=source, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-3000:]
    (wheel,) = (tmp_path / "wheel").glob("*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    modules = {f"chatgate/{path.relative_to(ROOT / 'app').as_posix()}" for path in (ROOT / "app").rglob("*.py")} | {
        f"chatgate/adapters/{path.relative_to(ROOT / 'adapters').as_posix()}"
        for path in (ROOT / "adapters").rglob("*.py")
    }
    assert modules <= names
    page = {f"chatgate/static/{path.name}" for path in (ROOT / "app" / "static").iterdir()}
    assert page == {"chatgate/static/index.html", "chatgate/static/chat.css", "chatgate/static/chat.js"}
    assert page | {"chatgate/py.typed", "chatgate/adapters/py.typed"} <= names
    (license_file,) = [name for name in names if name.startswith("chatgate-") and name.endswith("/LICENSE")]
    assert zipfile.ZipFile(wheel).read(license_file) == (ROOT / "LICENSE").read_bytes()
    assert {name for name in names if not name.startswith("chatgate-")} == modules | page | {
        "chatgate/py.typed",
        "chatgate/adapters/py.typed",
    }

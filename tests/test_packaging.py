"""The install puts chatgate under one import name, and lists every subpackage of app/ and adapters/."""

import tomllib
from pathlib import Path

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

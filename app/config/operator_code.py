"""Where operator code is imported from: the config file's folder, as Python does for a script's folder.

A tool's ``function = "weather:forecast"`` finds ``weather.py`` (or a ``weather/`` package) beside the
config file, with no ``PYTHONPATH``; so does an ``import`` inside a template's code file. The folder goes
first on ``sys.path``, exactly as ``python script.py`` puts the script's folder first, so a module there
wins over an installed one of the same name. Installed packages and ``PYTHONPATH`` still work as before.

``import_function`` finds a callable by its ``package.module:function`` path: the config's checks use it
to report a tool that does not import, and the agents to bind it.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

__all__ = ["import_function", "make_importable"]


def make_importable(base_dir: Path) -> None:
    """Put ``base_dir`` first on ``sys.path`` (once), so modules beside the config import."""
    folder = str(base_dir.resolve())
    if folder not in sys.path:
        sys.path.insert(0, folder)
        importlib.invalidate_caches()


def import_function(path: str, base_dir: Path | None = None) -> Callable[..., Any]:
    """The callable at ``package.module:function``; ``ValueError`` says what is wrong with the path.

    With ``base_dir`` (the config file's folder) modules beside the config import too; see
    ``make_importable``.
    """
    module_name, _, attribute = path.partition(":")
    if not module_name or not attribute:
        raise ValueError(f"{path!r} is not of the form package.module:function")
    if base_dir is not None:
        make_importable(base_dir)
    try:
        target: Any = importlib.import_module(module_name)
    except ImportError as exc:
        raise ValueError(f"cannot import {module_name!r}: {exc}") from exc
    for name in attribute.split("."):
        target = getattr(target, name, None)
        if target is None:
            raise ValueError(f"{module_name!r} has no attribute {attribute!r}")
    if not callable(target):
        raise ValueError(f"{path!r} is not callable")
    return target  # type: ignore[no-any-return]

"""Where operator code is imported from: the config file's folder, as Python does for a script's folder.

A tool's ``function = "weather:forecast"`` finds ``weather.py`` (or a ``weather/`` package) beside the
config file, with no ``PYTHONPATH``; so does an ``import`` inside a template's code file. The folder goes
first on ``sys.path``, exactly as ``python script.py`` puts the script's folder first, so a module there
wins over an installed one of the same name. Installed packages and ``PYTHONPATH`` still work as before.
"""

from __future__ import annotations

import importlib
import sys
from pathlib import Path

__all__ = ["make_importable"]


def make_importable(base_dir: Path) -> None:
    """Put ``base_dir`` first on ``sys.path`` (once), so modules beside the config import."""
    folder = str(base_dir.resolve())
    if folder not in sys.path:
        sys.path.insert(0, folder)
        importlib.invalidate_caches()

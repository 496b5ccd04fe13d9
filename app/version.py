"""The installed package's version: ``chatgate --version`` and ``chatgate.__version__``.

Read from the distribution's metadata, so ``pyproject.toml`` holds the one true number.
"""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version

__all__ = ["DISTRIBUTION", "installed_version"]

DISTRIBUTION = "chatgate"
"""The name chatgate is installed under (``pip install chatgate``)."""


def installed_version() -> str:
    """The installed chatgate's version, or ``"0+unknown"`` when it runs from a tree never installed."""
    try:
        return version(DISTRIBUTION)
    except PackageNotFoundError:
        return "0+unknown"

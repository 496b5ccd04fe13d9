"""Words as the leak guard compares them: NFKC, case-folded, punctuation and whitespace ignored.

A word is a run of letters, digits, underscores, combining marks and invisible format characters
(U+200B and the like, so a zero-width space cannot split a word). Each word is then normalized on its
own (NFKC, ``casefold``, format characters dropped) and split again where normalization left
anything that is not a letter or digit: ``snake_case`` is two words, as ``snake case`` is. The guarded
text and every answer go through the same two steps, so they agree by construction.
"""

from __future__ import annotations

import re
import unicodedata

__all__ = ["JSON_TOKEN", "WORD", "normalized"]


_CATEGORIES = [unicodedata.category(chr(point)) for point in range(0x10000)]


def _ranges(points: list[int]) -> str:
    """A regex class body holding ``points`` (sorted), as ranges."""
    ranges: list[list[int]] = []
    for point in points:
        if ranges and ranges[-1][1] == point - 1:
            ranges[-1][1] = point
        else:
            ranges.append([point, point])
    return "".join(f"\\u{first:04x}-\\u{last:04x}" for first, last in ranges)


# Combining marks (M*) and format characters (Cf) of the BMP belong to the word they sit in.
_CLASS = "\\w" + _ranges([point for point, kind in enumerate(_CATEGORIES) if kind[0] == "M" or kind == "Cf"])
WORD = re.compile(f"[{_CLASS}]+")
"""A raw word of plain text (answer text, reasoning, the guarded text)."""

JSON_TOKEN = re.compile(f"\\\\(?:u[0-9A-Fa-f]{{0,4}}|[\\s\\S]?)|[{_CLASS}]+")
"""A raw word of JSON text, or an escape (``\\n``, ``\\u00e9``) skipped as a separator."""

_SUBWORD = re.compile(r"[^\W_]+")
_FORMAT = dict.fromkeys(point for point, category in enumerate(_CATEGORIES) if category == "Cf")
"""A ``str.translate`` table removing every format character."""
del _CATEGORIES


_NORMALIZED: dict[str, tuple[str, ...]] = {}
_CACHED = 65536


def normalized(raw: str) -> tuple[str, ...]:
    """The words ``raw`` (one match of ``WORD``) counts as: NFKC, case-folded, split on what is left over."""
    words = _NORMALIZED.get(raw)
    if words is None:
        words = _normalized(raw)
        if len(_NORMALIZED) < _CACHED:  # a model's vocabulary is small; what is beyond is computed each time
            _NORMALIZED[raw] = words
    return words


def _normalized(raw: str) -> tuple[str, ...]:
    if raw.isascii():
        lowered = raw.lower()
        return (lowered,) if "_" not in lowered else tuple(_SUBWORD.findall(lowered))
    folded = unicodedata.normalize("NFKC", raw.translate(_FORMAT)).casefold()
    return tuple(_SUBWORD.findall(unicodedata.normalize("NFKC", folded)))

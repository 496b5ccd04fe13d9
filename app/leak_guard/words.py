"""Words as the leak guard compares them: NFKC, case-folded, look-alikes mapped, punctuation and whitespace ignored.

A word is a run of letters, digits, underscores, combining marks and default-ignorable characters
(U+200B, U+034F, variation selectors, tag characters, Hangul fillers: a character a renderer draws
as nothing cannot split a word). Each word is then normalized on its own (default-ignorables dropped,
NFKC, ``casefold``, every letter that looks like another mapped to one skeleton, UTS #39) and split
again where normalization left anything that is not a letter or digit: ``snake_case`` is two words,
as ``snake case`` is. The guarded text and every answer go through the same steps, so they agree by
construction.

Two other tokenizers find words in text that is decoded before anyone reads it: ``JSON_TOKEN`` (tool
call arguments: ``\\u0059ou`` is ``You`` once parsed) and ``MARKUP_TOKEN`` (answers a chat page renders
as markdown: ``Y*ou*``, ``Y<b></b>ou`` and ``Y&#111;u`` show as ``You``, ``&nbsp;`` as a space). Their
raw words hold the escapes, tags and entities, and ``normalized`` decodes them first.
"""

from __future__ import annotations

import html
import json
import re
import unicodedata
from functools import cache

__all__ = ["CUT_MARKUP", "DEFAULT_IGNORABLE", "JSON_TOKEN", "MARKUP_TOKEN", "WORD", "normalized", "skeletons"]

DEFAULT_IGNORABLE = (
    (0x00AD, 0x00AD),
    (0x034F, 0x034F),
    (0x061C, 0x061C),
    (0x115F, 0x1160),
    (0x17B4, 0x17B5),
    (0x180B, 0x180F),
    (0x200B, 0x200F),
    (0x202A, 0x202E),
    (0x2060, 0x206F),
    (0x3164, 0x3164),
    (0xFE00, 0xFE0F),
    (0xFEFF, 0xFEFF),
    (0xFFA0, 0xFFA0),
    (0xFFF0, 0xFFF8),
    (0x1BCA0, 0x1BCA3),
    (0x1D173, 0x1D17A),
    (0xE0000, 0xE0FFF),
)
"""Unicode's ``Default_Ignorable_Code_Point`` ranges, from DerivedCoreProperties.txt (Unicode 15.1.0; the same
since 9.0): code points a renderer shows as nothing when it has no glyph for them. Python's ``unicodedata``
does not expose the property; tests/leak_guard/test_words.py derives it from its definition (``Cf`` and
variation selectors and Other_Default_Ignorable_Code_Point, without the prepended concatenation marks,
interlinear annotations and Egyptian format controls) and compares."""

_CATEGORIES = [unicodedata.category(chr(point)) for point in range(0x10000)]


def _class(points: list[int]) -> str:
    """A regex class body holding ``points`` (sorted), as ranges."""
    ranges: list[list[int]] = []
    for point in points:
        if ranges and ranges[-1][1] == point - 1:
            ranges[-1][1] = point
        else:
            ranges.append([point, point])
    return "".join(f"\\U{first:08x}-\\U{last:08x}" for first, last in ranges)


_IGNORABLE = sorted({point for first, last in DEFAULT_IGNORABLE for point in range(first, last + 1)})
# Combining marks (M*) and format characters (Cf) of the BMP, and every default-ignorable, belong to the
# word they sit in.
_CLASS = "\\w" + _class(
    sorted({point for point, kind in enumerate(_CATEGORIES) if kind[0] == "M" or kind == "Cf"}.union(_IGNORABLE))
)
WORD = re.compile(f"[{_CLASS}]+")
"""A raw word of plain text (answer text, reasoning, the guarded text)."""

JSON_TOKEN = re.compile(f"\\\\[^u]|(?:[{_CLASS}]|\\\\u[0-9A-Fa-f]{{4}})+")
"""A raw word of JSON text, its ``\\uXXXX`` escapes in it, or another escape (``\\n``, ``\\"``): a separator."""

_TAG = "</?[A-Za-z][^<>]{0,256}>"
_ENTITY = "&(?:#[0-9]{1,7}|#[xX][0-9A-Fa-f]{1,6}|[A-Za-z][A-Za-z0-9]{1,31});"
MARKUP_TOKEN = re.compile(f"(?:[{_CLASS}*~`]|{_TAG}|{_ENTITY})+")
"""A raw word of markdown or HTML: its emphasis marks, inline tags and character references in it."""

CUT_MARKUP = re.compile("(?:</?(?:[A-Za-z][^<>]{0,256})?|&(?:#[xX]?)?[A-Za-z0-9]{0,31})\\Z")
"""A tag or character reference cut by the end of a chunk: carried over to the next one."""

_SUBWORD = re.compile(r"[^\W_]+")
_DROPPED = dict.fromkeys([point for point, category in enumerate(_CATEGORIES) if category == "Cf"] + _IGNORABLE)
"""A ``str.translate`` table removing every format and default-ignorable character."""
del _CATEGORIES

_MARKS = re.compile(f"{_TAG}|[*~`]")
_MARKUP = re.compile("[&<*~`]")
_ESCAPE = re.compile(r"\\u([0-9A-Fa-f]{4})")


@cache
def skeletons() -> tuple[dict[int, str], dict[int, str]]:
    """The two ``str.translate`` tables of look-alikes (UTS #39): capitals before case folding, the rest after.

    Built once a process (about 0.3 s), when a config with a guarded agent loads, from confusable-homoglyphs' copy
    of Unicode's confusables.txt, where each pair is recorded both ways: a character with one partner whose partner
    has several is a source and maps to that prototype; a pair that only has each other maps to the lower code
    point. Folded words meet the second table (Cyrillic small o, U+043E, is ``o``). A capital whose prototype is a
    capital (Greek capital epsilon, U+0395, is ``E``) meets the first, before case folding, since its small letter
    may look like something else (U+03B5 is the prototype U+A793). ASCII is left as it is, so an ASCII word needs no
    table.
    """
    from confusable_homoglyphs.confusables import confusables_data  # its JSON loads on import: only when needed

    capitals: dict[int, str] = {}
    small: dict[int, str] = {}
    for source, targets in confusables_data.items():
        char = source.replace("\u200e", "")  # right-to-left characters are wrapped in marks
        if len(char) != 1 or char.isascii() or len(targets) != 1:
            continue
        target = unicodedata.normalize("NFKC", targets[0]["c"].replace("\u200e", ""))
        partners = confusables_data.get(targets[0]["c"], ())
        if len(target) > 1 or len(partners) > 1 or ord(target) < ord(char):
            small[ord(char)] = unicodedata.normalize("NFKC", target.casefold())
            if char.casefold() != char and target.casefold() != target:
                capitals[ord(char)] = target
    for _ in range(2):  # a folded target may itself have a look-alike's skeleton
        small = {point: target.translate(small) for point, target in small.items()}
    return capitals, small


def prepare_look_alikes() -> None:
    """Build the look-alikes' tables now (once a process), so the first guarded answer does not wait for them."""
    skeletons()


def _fold(text: str) -> str:
    """Default-ignorables dropped, NFKC, look-alike capitals mapped, case-folded, look-alikes mapped, NFKC."""
    capitals, small = skeletons()
    text = unicodedata.normalize("NFKC", text.translate(_DROPPED)).translate(capitals)
    return unicodedata.normalize("NFKC", text.casefold().translate(small))


_NORMALIZED: dict[str, tuple[str, ...]] = {}
_CACHED = 65536


def normalized(raw: str) -> tuple[str, ...]:
    """The words ``raw`` (one match of a tokenizer) counts as: decoded, folded, skeletons, split on what is left."""
    words = _NORMALIZED.get(raw)
    if words is None:
        words = _normalized(raw)
        if len(_NORMALIZED) < _CACHED:  # a model's vocabulary is small; what is beyond is computed each time
            _NORMALIZED[raw] = words
    return words


def _normalized(raw: str) -> tuple[str, ...]:
    if "\\" in raw:  # only a JSON word holds one
        raw = _unescaped(raw)
    elif _MARKUP.search(raw):
        raw = html.unescape(_MARKS.sub("", raw))
    if raw.isascii():
        lowered = raw.lower()
        return (lowered,) if lowered.isalnum() else tuple(_SUBWORD.findall(lowered))
    return tuple(_SUBWORD.findall(_fold(raw)))


def _unescaped(raw: str) -> str:
    """A JSON word with its ``\\uXXXX`` escapes decoded (a surrogate pair becomes its character)."""
    try:
        decoded = json.loads(f'"{raw}"')
    except ValueError:  # a lone surrogate's escape, say
        decoded = _ESCAPE.sub(lambda match: chr(int(match[1], 16)), raw)
    return decoded if isinstance(decoded, str) else raw

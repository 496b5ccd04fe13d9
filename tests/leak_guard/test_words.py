"""Words as the leak guard reads them: the default-ignorable table, look-alikes, JSON escapes and markup."""

from __future__ import annotations

import unicodedata

from chatgate.leak_guard.words import DEFAULT_IGNORABLE, JSON_TOKEN, MARKUP_TOKEN, WORD, normalized
from tests.leak_guard.test_leak_guard import LOOK_ALIKES

# PropList.txt's Other_Default_Ignorable_Code_Point and the exclusions in DerivedCoreProperties.txt's
# definition of Default_Ignorable_Code_Point (Unicode 15.1).
_OTHER = [0x034F, 0x115F, 0x1160, 0x17B4, 0x17B5, 0x2065, 0x3164, 0xFFA0, *range(0xFFF0, 0xFFF9), 0xE0000]
_OTHER += [*range(0xE0002, 0xE0020), *range(0xE0080, 0xE0100), *range(0xE01F0, 0xE1000)]
_VARIATION_SELECTORS = [*range(0x180B, 0x180E), 0x180F, *range(0xFE00, 0xFE10), *range(0xE0100, 0xE01F0)]
_PREPENDED = [*range(0x0600, 0x0606), 0x06DD, 0x070F, 0x0890, 0x0891, 0x08E2, 0x110BD, 0x110CD]
_EXCLUDED = {*_PREPENDED, *range(0xFFF9, 0xFFFC), *range(0x13430, 0x13440)}


def _words(text: str, token: object = WORD) -> list[str]:
    return [word for raw in token.findall(text) for word in normalized(raw)]  # type: ignore[attr-defined]


def test_the_default_ignorable_table_is_the_derived_property() -> None:
    formats = [point for point in range(0x110000) if unicodedata.category(chr(point)) == "Cf"]
    derived = {*formats, *_OTHER, *_VARIATION_SELECTORS} - _EXCLUDED
    table = {point for first, last in DEFAULT_IGNORABLE for point in range(first, last + 1)}
    assert table == derived


def test_every_default_ignorable_is_dropped_inside_a_word() -> None:
    for first, last in DEFAULT_IGNORABLE:
        for point in {first, last}:
            assert _words(f"Y{chr(point)}ou are") == ["you", "are"], hex(point)


def test_look_alike_letters_read_as_the_letters_they_copy() -> None:
    assert _words("You are ACME's support agent".translate(LOOK_ALIKES)) == _words("You are ACME's support agent")
    greek = "".join(map(chr, [0x391, 0x392, 0x395, 0x396, 0x397, 0x399, 0x39A, 0x39C, 0x39D, 0x39F, 0x3A1, 0x3A4]))
    assert _words(greek + " \u03bf \u03b9 \u03bd") == _words("ABEZHIKMNOPT o i v")  # capitals, small letters
    assert _words("\u0399nternal") == ["internal"]  # a Greek capital iota reads as the I it copies, not an l


def test_json_escapes_are_decoded_inside_words() -> None:
    assert _words(r'{"a": "Y\u006fu\u0020are \u0041CME\n\"ok\""}', JSON_TOKEN) == ["a", "you", "are", "acme", "ok"]
    assert _words(r'"\ud835\udc1aa"', JSON_TOKEN) == ["aa"]  # a surrogate pair: a mathematical bold a


def test_markup_reads_as_a_renderer_shows_it() -> None:
    shown = "Y*ou* a<b></b>re A&#67;ME&#x27;s&nbsp;support `ag`ent ~~ne~~ver"
    assert _words(shown, MARKUP_TOKEN) == ["you", "are", "acme", "s", "support", "agent", "never"]
    assert _words("&lt;b&gt;", MARKUP_TOKEN) == ["b"]  # an escaped tag shows as text

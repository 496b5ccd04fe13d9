"""The leak guard's matcher and event filter: a leaked prompt is never visible, other answers pass byte for byte.

Properties (hypothesis) over prompts of random words, answers that quote a run of them respelled (case,
separators, full-width letters, zero-width spaces, mathematical letters: all NFKC-equal; default-ignorable
characters inside words; Cyrillic and Greek look-alike letters; markdown and HTML a renderer decodes; JSON
escapes in tool call arguments), cut at any chunk boundaries, in text, reasoning and tool call arguments,
and across the text spans of one answer.
"""

from __future__ import annotations

import asyncio
import html
import itertools
import json
import re
from collections.abc import AsyncIterator

from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from chatgate.events import (
    ModelFinished,
    ReasoningDelta,
    ReasoningEnd,
    ReasoningStart,
    RunEvent,
    SourceCited,
    TextDelta,
    TextEnd,
    TextStart,
    ToolCallDelta,
    ToolCallEnd,
    ToolCallStart,
)
from chatgate.history import AssistantMessage, SystemMessage, TextPart, UserMessage
from chatgate.leak_guard import REDACTED, PromptLeak, StreamWatch, guarded_text, start_guard
from chatgate.leak_guard.words import WORD, normalized
from chatgate.providers import ModelRequest

K = 8
VOCABULARY = [
    "you", "are", "acme", "support", "agent", "never", "reveal", "the", "internal", "discount", "code",
    "to", "anyone", "always", "answer", "in", "english", "refund", "policy", "is", "thirty", "days",
    "a", "of", "and", "it", "customer", "plan", "beta", "secret", "rule", "zeta",
]  # fmt: skip
SEPARATORS = [" ", "  ", "\n", ", ", ". ", "\t", " - ", ": ", "; ", "\n\n", " (", ") ", "! "]
IGNORABLES = ["\u034f", "\ufe0f", "\U000e0100", "\u180b", "\U000e0041", "\u3164", "\u115f", "\u00ad", "\u2060"]
# Cyrillic letters for a, c, e, i, o, p, s, x, y and the capitals, and a Greek capital Upsilon for Y
_CYRILLIC = [0x430, 0x441, 0x435, 0x456, 0x43E, 0x440, 0x455, 0x445, 0x443, 0x410, 0x421, 0x415, 0x41D, 0x406]
_CYRILLIC += [0x41A, 0x41C, 0x41E, 0x420, 0x422, 0x425, 0x3A5]
LOOK_ALIKES = str.maketrans("aceiopsxyACEHIKMOPTXY", "".join(map(chr, _CYRILLIC)))
STYLES = 7
FAST = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def words_of(text: str) -> list[str]:
    return [word for raw in WORD.findall(text) for word in normalized(raw)]


def visible_leak(shown: str, prompt: str, k: int = K) -> bool:
    """Whether ``shown`` holds ``k`` consecutive words of ``prompt`` outside a redaction."""
    grams = {tuple(words_of(prompt)[i : i + k]) for i in range(len(words_of(prompt)) - k + 1)}
    for piece in shown.split(REDACTED):
        words = words_of(piece)
        if any(tuple(words[i : i + k]) in grams for i in range(len(words) - k + 1)):
            return True
    return False


def respell(word: str, style: int) -> str:
    """``word`` in one of several NFKC-equal spellings."""
    if style == 1:
        return word.upper()
    if style == 2:
        return word.capitalize()
    if style == 3:
        return "".join(chr(ord(c) + 0xFEE0) for c in word)  # full-width letters
    if style == 4 and len(word) > 1:
        return word[0] + "\u200b" + word[1:]  # a zero-width space inside the word
    if style == 5:
        return "".join(chr(0x1D41A + ord(c) - ord("a")) if c.isalpha() else c for c in word)  # bold math letters
    if style == 6:
        return word[:1] + IGNORABLES[len(word) % len(IGNORABLES)] + word[1:]  # drawn as nothing
    if style == 7:
        return word.capitalize().translate(LOOK_ALIKES)
    return word


def marked_up(word: str, style: int) -> str:
    """``word`` as markdown or HTML that a renderer shows as the word."""
    if len(word) < 2:
        return word
    if style == 0:
        return f"{word[0]}*{word[1:]}*"
    if style == 1:
        return f"{word[0]}<b></b>{word[1:]}"
    if style == 2:
        return f"{word[0]}&#{ord(word[1])};{word[2:]}"
    return f"**{word}**"


def rendered(text: str) -> str:
    """``text`` as a markdown renderer shows it: tags and emphasis marks gone, references decoded."""
    return html.unescape(re.sub(r"</?[A-Za-z][^<>]*>|[*~`]", "", text))


@st.composite
def prompts(draw: st.DrawFn) -> str:
    words = draw(st.lists(st.sampled_from(VOCABULARY), min_size=K, max_size=30))
    return " ".join(words) + "."


@st.composite
def spelled(draw: st.DrawFn, words: list[str]) -> str:
    out = []
    for word in words:
        out.append(respell(word, draw(st.integers(0, STYLES))))
        out.append(draw(st.sampled_from(SEPARATORS)))
    return "".join(out)


@st.composite
def cuts(draw: st.DrawFn, text: str) -> list[str]:
    points = sorted(set(draw(st.lists(st.integers(0, len(text)), max_size=len(text) + 1))))
    bounds = [0, *points, len(text)]
    return [text[a:b] for a, b in itertools.pairwise(bounds)]


def watch(chunks: list[str], prompt: str, *, redact: bool = True, json_args: bool = False) -> tuple[str, StreamWatch]:
    stream = StreamWatch(guarded_text(prompt, K), None, redact=redact, json=json_args)
    shown = "".join(stream.feed(chunk) for chunk in chunks) + stream.finish()
    return shown, stream


@FAST
@given(st.data())
def test_a_leaked_run_is_never_visible_at_any_chunk_split(data: st.DataObject) -> None:
    prompt = data.draw(prompts())
    words = prompt.rstrip(".").split()
    start = data.draw(st.integers(0, len(words) - K))
    end = data.draw(st.integers(start + K, len(words)))
    before = data.draw(st.lists(st.sampled_from(["hello", "sure", "here", "ok"]), max_size=4))
    text = " ".join(before) + " " + data.draw(spelled(words[start:end])) + " thanks!"
    chunks = data.draw(cuts(text))
    shown, stream = watch(chunks, prompt)
    assert stream.leaks
    assert not visible_leak(shown, prompt)
    assert REDACTED in shown


@FAST
@given(st.data())
def test_an_answer_sharing_fewer_than_min_words_passes_byte_for_byte(data: st.DataObject) -> None:
    prompt = data.draw(prompts())
    words = data.draw(st.lists(st.sampled_from([*VOCABULARY, "banana", "x", "ok"]), max_size=40))
    text = data.draw(spelled(words))
    assume(not visible_leak(text, prompt))
    shown, stream = watch(data.draw(cuts(text)), prompt)
    assert shown == text and not stream.leaks


@FAST
@given(st.data())
def test_stop_mode_shows_only_what_came_before_the_leak(data: st.DataObject) -> None:
    prompt = data.draw(prompts())
    words = prompt.rstrip(".").split()
    text = "Well, here goes: " + data.draw(spelled(words[:K])) + " and more"
    shown, stream = watch(data.draw(cuts(text)), prompt, redact=False)
    assert stream.stopped and len(stream.leaks) == 1
    assert text.startswith(shown) and not visible_leak(shown, prompt)


@FAST
@given(st.data())
def test_leaked_tool_arguments_stay_json_and_hide_the_prompt(data: st.DataObject) -> None:
    prompt = data.draw(prompts())
    words = prompt.rstrip(".").split()
    split = data.draw(st.integers(1, K - 1))  # the leak crosses two JSON strings
    glue = data.draw(st.sampled_from([" ", "\n", "\t", "\u00a0", " \u2003 ", '" '])).join  # escapes, cut anywhere
    arguments = json.dumps({"q": [glue(words[:split]), glue(words[split:])], "n": 3})
    shown, stream = watch(data.draw(cuts(arguments)), prompt, json_args=True)
    decoded = json.loads(shown)
    assert stream.leaks and decoded["n"] == 3
    assert not visible_leak(" ".join(decoded["q"]), prompt)


def test_the_canary_is_caught_in_any_spacing() -> None:
    prompt = "short prompt"
    for spelling in ["cgk7qx", "C G K 7 Q X", "c-g-k-7-q-x", respell("cgk7qx", 3), "c\u200bgk7qx", "xxcgk7qxyy"]:
        text = f"the marker is {spelling} ok"
        stream = StreamWatch(guarded_text(prompt, K), "cgk7qx", redact=True)
        shown = "".join(stream.feed(c) for c in text) + stream.finish()
        assert "[redacted]" in shown and stream.leaks, spelling
        assert "cgk7qx" not in "".join(words_of(shown)), spelling


def test_text_that_starts_no_leak_is_released_at_once() -> None:
    stream = StreamWatch(guarded_text(" ".join(VOCABULARY[:10]), K), None, redact=True)
    assert stream.feed("Bananas ") == "Bananas "
    assert stream.feed("grow") == "grow"  # "grow" is not the start of any prompt word
    assert stream.feed(" you are") == " "  # "you are" could begin the prompt: held
    assert stream.feed(" kind ") == "you are kind "  # it did not


def run_guard(events: list[RunEvent], prompt: str, mode: str = "redact") -> list[RunEvent]:
    request = ModelRequest("m", (SystemMessage(prompt), UserMessage((TextPart("hi"),))))
    _, guard = start_guard(request, mode=mode, min_words=K, canary=False, agent="bot", run_id="r")  # type: ignore[arg-type]
    assert guard is not None

    async def source() -> AsyncIterator[RunEvent]:
        for event in events:
            yield event

    async def collect() -> list[RunEvent]:
        return [event async for event in guard.watch(source())]

    return asyncio.run(collect())


@FAST
@given(st.data())
def test_the_event_filter_hides_a_leak_in_text_and_reasoning(data: st.DataObject) -> None:
    prompt = data.draw(prompts())
    words = prompt.rstrip(".").split()
    reasoning = data.draw(cuts("I should say " + data.draw(spelled(words[:K]))))
    text = data.draw(cuts("Here: " + data.draw(spelled(words[-K:])) + " bye"))
    events: list[RunEvent] = [ReasoningStart("r1"), *(ReasoningDelta("r1", c) for c in reasoning), ReasoningEnd("r1")]
    events += [TextStart("t1"), *(TextDelta("t1", c) for c in text)]  # no TextEnd: the model call's end flushes
    events += [ModelFinished("stop")]
    out = run_guard(events, prompt)
    shown_reasoning = "".join(e.delta for e in out if isinstance(e, ReasoningDelta))
    shown_text = "".join(e.delta for e in out if isinstance(e, TextDelta))
    assert not visible_leak(shown_reasoning, prompt) and not visible_leak(shown_text, prompt)
    assert shown_text.endswith(" bye") and type(out[-1]) is ModelFinished


def test_a_tool_call_end_carries_the_redacted_arguments() -> None:
    prompt = " ".join(VOCABULARY[:12])
    arguments = json.dumps({"text": " ".join(VOCABULARY[:9])})
    events: list[RunEvent] = [ToolCallStart("c1", "show"), ToolCallDelta("c1", arguments), ToolCallEnd("c1", arguments)]
    out = run_guard(events, prompt)
    end = out[-1]
    assert isinstance(end, ToolCallEnd) and json.loads(end.arguments) == {"text": REDACTED}
    assert "".join(e.delta for e in out if isinstance(e, ToolCallDelta)) == end.arguments


def test_stop_mode_ends_the_call_with_prompt_leak() -> None:
    prompt = " ".join(VOCABULARY[:12])
    events: list[RunEvent] = [TextStart("t1"), TextDelta("t1", "Sure. " + " ".join(VOCABULARY[:9])), TextEnd("t1")]
    try:
        run_guard(events, prompt, mode="stop")
    except PromptLeak:
        pass
    else:
        raise AssertionError("the leak did not stop the run")


def test_the_canary_is_added_to_the_system_text_and_differs_per_run() -> None:
    request = ModelRequest("m", (SystemMessage("Be brief."), UserMessage((TextPart("hi"),))))
    markers = set()
    for _ in range(2):
        sent, guard = start_guard(request, mode="redact", min_words=K, canary=True, agent="bot", run_id="r")
        assert guard is not None and isinstance(sent.messages[1], SystemMessage)
        assert sent.messages[0].content == "Be brief." and isinstance(sent.messages[2], UserMessage)
        markers.add(sent.messages[1].content.rsplit(" ", 1)[1])
    assert len(markers) == 2


def test_no_guard_when_off_or_nothing_to_guard() -> None:
    request = ModelRequest("m", (SystemMessage("Be brief and kind."), UserMessage((TextPart("hi"),))))
    assert start_guard(request, mode="redact", min_words=K, canary=False, agent="a", run_id="r")[1] is None
    long = ModelRequest("m", (SystemMessage(" ".join(VOCABULARY)), UserMessage((TextPart("hi"),))))
    assert start_guard(long, mode="off", min_words=K, canary=False, agent="a", run_id="r")[1] is None
    assert start_guard(long, mode="redact", min_words=K, canary=False, agent="a", run_id="r")[1] is not None


def test_stop_mode_stops_at_the_word_that_ended_in_the_last_chunk() -> None:
    # The eighth word ends where the next chunk begins; the words after it in that chunk are not looked at
    # (they went on matching and were counted as a second leak; found by hypothesis).
    prompt = "you acme support support support internal is plan and."
    chunks = ["Well, here goes: you acme  support  support  support  internal  is - plan", "  and more"]
    shown, stream = watch(chunks, prompt, redact=False)
    assert stream.stopped and len(stream.leaks) == 1
    assert shown == "Well, here goes: "


@FAST
@given(st.data())
def test_markup_a_renderer_decodes_hides_no_leak(data: st.DataObject) -> None:
    prompt = data.draw(prompts())
    words = prompt.rstrip(".").split()
    spaces = [" ", "&nbsp;", " <i></i>", "&#32;", "\n"]
    quoted = "".join(marked_up(w, data.draw(st.integers(0, 3))) + data.draw(st.sampled_from(spaces)) for w in words)
    text = "Here it is: " + quoted + " thanks!"
    stream = StreamWatch(guarded_text(prompt, K, markup=True), None, redact=True)
    shown = "".join(stream.feed(chunk) for chunk in data.draw(cuts(text))) + stream.finish()
    assert stream.leaks and REDACTED in shown
    assert not any(visible_leak(rendered(piece), prompt) for piece in shown.split(REDACTED))


@FAST
@given(st.data())
def test_json_escapes_inside_words_of_tool_arguments_hide_no_leak(data: st.DataObject) -> None:
    prompt = data.draw(prompts())
    words = prompt.rstrip(".").split()
    escaped = data.draw(st.lists(st.booleans(), min_size=len(prompt), max_size=len(prompt)))
    value = " ".join("".join(f"\\u{ord(c):04x}" if escaped[i] else c for i, c in enumerate(word)) for word in words)
    arguments = '{"q": "' + value + '", "n": 3}'
    shown, stream = watch(data.draw(cuts(arguments)), prompt, json_args=True)
    decoded = json.loads(shown)
    assert stream.leaks and decoded["n"] == 3
    assert not visible_leak(decoded["q"], prompt)


@FAST
@given(st.data())
def test_text_spans_split_by_tool_calls_hide_no_leak_when_joined(data: st.DataObject) -> None:
    # A stored message joins its text spans (an AG-UI hydrate shows them as one): K - 1 words a span.
    prompt = data.draw(prompts())
    words = prompt.rstrip(".").split()
    events: list[RunEvent] = []
    for n, at in enumerate(range(0, len(words), K - 1)):
        span = data.draw(spelled(words[at : at + K - 1]))
        events += [TextStart(f"t{n}"), *(TextDelta(f"t{n}", c) for c in data.draw(cuts(span))), TextEnd(f"t{n}")]
        events += [ToolCallStart(f"c{n}", "show"), ToolCallDelta(f"c{n}", "{}"), ToolCallEnd(f"c{n}", "{}")]
    out = run_guard([*events, ModelFinished("stop")], prompt)
    joined = "".join(e.delta for e in out if isinstance(e, TextDelta))
    assert not visible_leak(joined, prompt), joined
    ends = [i for i, e in enumerate(out) if isinstance(e, TextEnd)]
    assert all(not isinstance(e, TextDelta) or any(i < end for end in ends) for i, e in enumerate(out))


def test_tool_call_names_and_ids_and_cited_sources_are_watched() -> None:
    prompt = " ".join(VOCABULARY[:12])
    leaked = "_".join(VOCABULARY[:9])
    events: list[RunEvent] = [
        ToolCallStart(leaked, leaked),
        ToolCallDelta(leaked, "{}"),
        ToolCallEnd(leaked, "{}"),
        SourceCited("s1", url="https://example.com/" + "-".join(VOCABULARY[:9]), title="A page"),
        SourceCited("s2", url="https://example.com/", title=" ".join(VOCABULARY[:9])),
        SourceCited("s3", url="https://example.com/a%20" + "%20".join(VOCABULARY[:9])),
        ModelFinished("stop"),
    ]
    out = run_guard(events, prompt)
    start, delta, end, source, finished = out
    assert isinstance(start, ToolCallStart) and start.name == REDACTED and leaked not in start.tool_call_id
    assert isinstance(delta, ToolCallDelta) and isinstance(end, ToolCallEnd)
    assert delta.tool_call_id == end.tool_call_id == start.tool_call_id
    assert isinstance(source, SourceCited) and source.source_id == "s2" and source.title == REDACTED
    assert isinstance(finished, ModelFinished)


def reference(text: str, prompt: str, k: int = K) -> str:
    """What the guard shows of ``text`` in ``redact`` mode, from the whole text at once (no streaming).

    A leak runs from the first word of the leftmost ``k`` words in a row of ``prompt`` to the last word
    that still continues it (its last ``k`` words are ``k`` words in a row of the prompt), and becomes one
    ``REDACTED``; matching starts afresh at the word after it.
    """
    found = [(match.start(), match.end(), word) for match in WORD.finditer(text) for word in normalized(match[0])]
    words = [word for _, _, word in found]
    prompt_words = words_of(prompt)
    grams = {tuple(prompt_words[i : i + k]) for i in range(len(prompt_words) - k + 1)}
    shown: list[str] = []
    emitted = 0
    at = 0
    while at + k <= len(words):
        if tuple(words[at : at + k]) not in grams:
            at += 1
            continue
        last = at + k
        while last < len(words) and tuple(words[last - k + 1 : last + 1]) in grams:
            last += 1
        shown += [text[emitted : max(found[at][0], emitted)], REDACTED]
        emitted = max(found[last - 1][1], emitted)
        at = last
    return "".join(shown) + text[emitted:]


@FAST
@given(st.data())
def test_the_guard_the_matcher_and_a_reference_agree_at_any_chunk_split(data: st.DataObject) -> None:
    prompt = data.draw(prompts())
    words = prompt.rstrip(".").split()
    pieces = data.draw(st.lists(st.sampled_from(["ok", "sure", *words]), max_size=12))
    start = data.draw(st.integers(0, len(words) - 1))
    quoted = words[start : start + data.draw(st.integers(0, 2 * K))]
    text = " ".join(pieces[:6]) + " " + " ".join(quoted) + data.draw(st.sampled_from([" ", ". ", ""]))
    text += " ".join(pieces[6:])
    chunks = data.draw(cuts(text))
    streamed, _ = watch(chunks, prompt)
    events: list[RunEvent] = [TextStart("t1"), *(TextDelta("t1", chunk) for chunk in chunks), TextEnd("t1")]
    filtered = "".join(e.delta for e in run_guard([*events, ModelFinished("stop")], prompt) if isinstance(e, TextDelta))
    assert streamed == filtered == reference(text, prompt), (streamed, filtered, reference(text, prompt))


def test_a_run_continuing_an_answer_is_watched_from_where_the_answer_stands() -> None:
    prompt = " ".join(VOCABULARY[:12])
    said = AssistantMessage((TextPart(" ".join(VOCABULARY[:5]) + " "),))
    request = ModelRequest("m", (SystemMessage(prompt), UserMessage((TextPart("hi"),)), said))
    for mode in ("redact", "stop"):
        _, guard = start_guard(request, mode=mode, min_words=K, canary=False, agent="bot", run_id="r")  # type: ignore[arg-type]
        assert guard is not None
        try:
            out = guard.filter(TextDelta("t2", " ".join(VOCABULARY[5:9]) + " thanks"))
        except PromptLeak:
            assert mode == "stop"
        else:
            assert mode == "redact" and isinstance(out, TextDelta) and out.delta == REDACTED  # 5 + 4 words
    leaked = AssistantMessage((TextPart(" ".join(VOCABULARY[:10])),))  # a client's own history, in stop mode
    request = ModelRequest("m", (SystemMessage(prompt), UserMessage((TextPart("hi"),)), leaked))
    _, guard = start_guard(request, mode="stop", min_words=K, canary=False, agent="bot", run_id="r")
    assert guard is not None and guard.filter(TextDelta("t2", "ok, bye ")) is not None

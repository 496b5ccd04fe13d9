"""Finding the guarded text in one stream of text as it arrives, holding back only what could still leak.

``GuardedText`` is built once per guarded text (and cached): an Aho-Corasick automaton over its runs
of ``min_words`` consecutive normalized words (app/leak_guard/words.py). ``StreamWatch`` follows
one stream (a text span, a reasoning span, a tool call's arguments): at each completed word it keeps
the longest run of the last words that still starts a guarded run, as KMP keeps a partial match. What
lies before that run can never be part of a leak and is released at once; the run itself (at most
``min_words - 1`` words) and a trailing word that could start one are held back. A run reaching
``min_words`` words is a leak: in ``redact`` mode its span becomes ``[redacted]`` and every following
word that continues the guarded text is swallowed with it; in ``stop`` mode the watch releases what
came before the span and stops.

The canary (a random marker of distinct characters) is found in the stream of the words' letters and
digits, whatever separates them, so ``c g k 7`` is caught as ``cgk7`` is.

Every token passes here, so the common cases are short (docs/performance.md, "The leak guard"): what a
chunk is to a guarded text (``GuardedText.plan``) is worked out once and remembered. While no run is
open and nothing is held (the stream is quiet), a chunk that leaves it so costs one dictionary lookup
and goes out as it is (``StreamWatch._passed``, the one quiet step); the usual `` word`` chunk, found in a
table of its own (``GuardedText.spaced_words``), takes a path inlined in ``feed``; the rest (a leak, the
canary, JSON escapes, markup, a word cut across chunks) goes the general way.
"""

from __future__ import annotations

import re
from collections import deque
from dataclasses import dataclass, field
from functools import lru_cache
from typing import NamedTuple

from chatgate.leak_guard.words import CUT_MARKUP, JSON_TOKEN, MARKUP_TOKEN, WORD, normalized, skeletons

__all__ = ["REDACTED", "GuardedText", "Leak", "StreamWatch", "guarded_text"]

REDACTED = "[redacted]"
"""What a leaked span becomes."""

_CACHED = 65536  # the most entries a cache of words or chunks keeps; beyond it, answers are computed each time
_PLANS = 16384  # the most chunks a guarded text remembers plans for (up to 64 texts are cached)
_MOVES = 16  # the most words a state's moves remember (a state is one of up to min_words per prompt word)


class Shape(NamedTuple):
    """A chunk's words, found once per chunk whatever the guarded text."""

    glued: bool
    """Whether it starts inside a word (its first word may continue the last chunk's)."""
    words: tuple[tuple[int, int, tuple[str, ...]], ...]
    """Each word it completes: start, end, normalized."""
    tail: int
    """Where its unfinished last word starts (-1: it ends between words)."""


_TEXT_SHAPES: dict[str, Shape] = {}
_MARKUP_SHAPES: dict[str, Shape] = {}
_JSON_SHAPES: dict[str, Shape] = {}


def _shape(delta: str, token: re.Pattern[str], shapes: dict[str, Shape]) -> Shape:
    """Find ``delta``'s words once; models send the same chunks over and over, so it is remembered."""
    glued = False
    words: list[tuple[int, int, tuple[str, ...]]] = []
    tail = -1
    for match in token.finditer(delta):
        raw = match.group()
        if raw[0] == "\\" and len(raw) == 2:
            continue  # a JSON escape other than \uXXXX separates words
        first, last = match.span()
        glued = glued or first == 0
        if last == len(delta):
            tail = first
        else:
            words.append((first, last, normalized(raw)))
    shape = Shape(glued, tuple(words), tail)
    if len(shapes) < _CACHED:
        shapes[delta] = shape
    return shape


class Plan(NamedTuple):
    """What a chunk is to one guarded text: its shape, and what it does to a stream (``GuardedText.plan``)."""

    glued: bool
    words: tuple[tuple[int, int, tuple[str, ...]], ...]
    tail: int
    quiet: bool
    """Whether it passes a quiet stream whole and leaves it quiet."""
    spaced: bool
    """Whether it is the usual `` word``: not glued, no word of its own, an unfinished word after a separator."""
    may_start: bool
    """Whether its unfinished word could start a run."""
    word: str | None
    """The one word its unfinished word normalizes to as it stands (None: several, or none)."""


class Spaced(NamedTuple):
    """A `` word`` chunk, as the short way in ``StreamWatch.feed`` needs it (see ``Plan``)."""

    tail: int
    may_start: bool
    word: str | None


_JSON_RUN = re.compile(r'(?:\\[\s\S]|[^"\\{}\[\],:])+')


@dataclass(frozen=True, slots=True)
class GuardedText:
    """What one guarded text is matched by: an Aho-Corasick automaton over its runs of ``min_words`` words.

    State 0 is "no open run"; a state's ``depth`` is how many of the last words it has matched, and a
    state of depth ``min_words`` is a leak. ``step`` follows a word, falling back along ``fail`` as KMP
    does, so each word costs one dictionary lookup, amortized.
    """

    min_words: int
    goto: tuple[dict[str, int], ...]
    fail: tuple[int, ...]
    depth: tuple[int, ...]
    moves: tuple[dict[str, int], ...]
    """``goto`` and the fallbacks ``step`` has found since, from every state but 0 (``follow``)."""
    first_words: frozenset[str]
    """The words that start a run of ``min_words``."""
    first_word_prefixes: frozenset[str]
    """Every prefix of a first word: a trailing, unfinished word that is one is held back."""
    longest_word: int
    markup: bool
    """Whether answer text and reasoning are read as markdown and HTML (``MARKUP_TOKEN``)."""
    starts: dict[str, bool] = field(default_factory=dict)
    """``may_start``'s answers, by raw unfinished word."""
    plans: dict[str, Plan] = field(default_factory=dict)
    """``plan``'s answers, by chunk of plain text."""
    quiet_tails: dict[str, int] = field(default_factory=dict)
    """The plain chunks that pass a quiet stream whole whatever came before (quiet, not glued to the word
    before), by chunk: where their unfinished last word starts (-1: none). A quiet stream's one lookup."""
    quiet_chunks: dict[str, int] = field(default_factory=dict)
    """``quiet_tails`` and the quiet chunks glued to the word before (``word ``), by chunk: what a quiet
    stream that ended between words looks its chunk up in instead."""
    json_plans: dict[str, Plan] = field(default_factory=dict)
    """``plan``'s answers, by chunk of JSON text."""
    spaced_words: dict[str, Spaced] = field(default_factory=dict)
    """The usual `` word`` chunks of plain text (``Plan``'s spaced), by chunk: where their unfinished word
    starts, whether it could start a run, and the one word it normalizes to. A stream with a run open looks
    its chunk up here (one lookup and a three-tuple instead of the whole plan)."""

    @property
    def empty(self) -> bool:
        """Whether the text is too short to leak (fewer than ``min_words`` words)."""
        return not self.first_words

    def step(self, state: int, word: str) -> int:
        """The state after ``word`` in ``state``."""
        goto = self.goto
        while True:
            following = goto[state].get(word)
            if following is not None:
                return following
            if not state:
                return 0
            state = self.fail[state]

    def follow(self, state: int, word: str) -> int:
        """``step``, remembering the fallbacks it finds (a model repeats its phrases)."""
        moves = self.moves[state]
        following = moves.get(word)
        if following is None:
            following = self.step(state, word) if state else 0
            if state and len(moves) < _MOVES:
                moves[word] = following
        return following

    def may_start(self, raw: str) -> bool:
        """Whether the unfinished word ``raw`` could still become a first word (its answer is remembered)."""
        words = normalized(raw)
        if not words:
            starts = True  # only format characters or marks so far: wait for the rest
        else:
            last = words[-1]
            starts = len(words) > 1 or (len(last) <= self.longest_word and last in self.first_word_prefixes)
        if len(self.starts) < _CACHED:
            self.starts[raw] = starts
        return starts

    def plan(self, delta: str, *, json: bool = False) -> Plan:
        """What ``delta`` is to this text (``Plan``); remembered, since models send the same chunks over and over.

        A chunk passes a quiet stream (no run open, nothing held) when, matched from no run, it leaves
        none open, holds no leak and its unfinished last word could not start one; JSON never does
        (an escape cut at a chunk's end is carried over to the next).
        """
        if json:
            shapes, token, plans = _JSON_SHAPES, JSON_TOKEN, self.json_plans
        elif self.markup:
            shapes, token, plans = _MARKUP_SHAPES, MARKUP_TOKEN, self.plans
        else:
            shapes, token, plans = _TEXT_SHAPES, WORD, self.plans
        shape = shapes.get(delta) or _shape(delta, token, shapes)
        glued, words, tail = shape
        state = 0
        leaks = False
        for _, _, found in words:
            for word in found:
                state = self.step(state, word)
                leaks = leaks or self.depth[state] == self.min_words
        raw = delta[tail:] if tail >= 0 else ""
        may = tail >= 0 and (self.starts.get(raw) if raw in self.starts else self.may_start(raw))
        # A tag or character reference cut at the chunk's end waits for the next chunk (``StreamWatch._uncut``).
        cut = self.markup and not json and ("<" in delta or "&" in delta) and CUT_MARKUP.search(delta) is not None
        quiet = bool(delta) and not json and not leaks and not state and not may and not cut
        spaced = tail > 0 and not words and not glued and not cut
        found = normalized(raw) if tail >= 0 else ()
        plan = Plan(glued, words, tail, quiet, spaced, bool(may), found[0] if len(found) == 1 else None)
        if len(plans) < _PLANS:
            plans[delta] = plan
            if quiet:
                self.quiet_chunks[delta] = tail
                if not glued:
                    self.quiet_tails[delta] = tail
            if spaced and not json:
                self.spaced_words[delta] = Spaced(tail, plan.may_start, plan.word)
        return plan


@lru_cache(maxsize=64)
def guarded_text(text: str, min_words: int, *, markup: bool = False) -> GuardedText:
    """The matching tables of ``text``; cached, since an agent's prompt is usually the same each run.

    ``markup``: answers are rendered as markdown and HTML, so their text is read as such.
    """
    skeletons()  # the look-alikes' tables are built before any answer needs them
    words = [word for raw in WORD.findall(text) for word in normalized(raw)]
    goto: list[dict[str, int]] = [{}]
    depth = [0]
    for start in range(len(words) - min_words + 1):
        state = 0
        for word in words[start : start + min_words]:
            following = goto[state].get(word)
            if following is None:
                following = goto[state][word] = len(goto)
                goto.append({})
                depth.append(depth[state] + 1)
            state = following
    fail = [0] * len(goto)
    queue = deque(goto[0].values())
    while queue:  # breadth first: a state's fail is known before its children's
        state = queue.popleft()
        for word, child in goto[state].items():
            queue.append(child)
            back = fail[state]
            while back and word not in goto[back]:
                back = fail[back]
            fail[child] = goto[back].get(word, 0) if goto[back].get(word, 0) != child else 0
    first = frozenset(goto[0])
    prefixes = frozenset(word[:end] for word in first for end in range(1, len(word) + 1))
    longest = max((len(word) for word in first), default=0)
    moves = tuple(dict(row) for row in goto)
    return GuardedText(min_words, tuple(goto), tuple(fail), tuple(depth), moves, first, prefixes, longest, markup)


@dataclass(frozen=True, slots=True)
class Leak:
    """Where a leak was found in a stream: its offset and length in characters (never its text)."""

    offset: int
    length: int


class StreamWatch:
    """One stream's matcher: ``feed`` each delta, ``finish`` at its end; each returns the text to release.

    ``json`` marks a tool call's arguments: escapes separate words, and a redaction keeps the JSON's
    quotes and punctuation so the arguments stay JSON. ``leaks`` lists what was found; after a leak in
    ``stop`` mode (``redact=False``) ``stopped`` is set and nothing more is released.
    ``reported`` is for the guard: how many leaks it has counted and logged.
    """

    __slots__ = (
        "_base",
        "_canary",
        "_canary_at",
        "_canary_start",
        "_carry",
        "_emitted",
        "_end",
        "_guarded",
        "_json",
        "_leak_start",
        "_leaking",
        "_markup",
        "_partial",
        "_pending",
        "_plain",
        "_plans",
        "_quiet",
        "_quiet_chunks",
        "_quiet_tails",
        "_redact",
        "_spaced_words",
        "_starts",
        "_state",
        "_tail_word",
        "_token",
        "leaks",
        "reported",
        "stopped",
    )

    def __init__(self, guarded: GuardedText, canary: str | None, *, redact: bool, json: bool = False) -> None:
        self._guarded = guarded
        self._canary = canary or ""
        self._redact = redact
        self._json = json
        self._markup = guarded.markup and not json
        self._token = JSON_TOKEN if json else MARKUP_TOKEN if self._markup else WORD
        self._plans: dict[str, Plan] = {} if json else guarded.plans  # JSON looks its plan up after ``_uncut``
        self._quiet_tails: dict[str, int] = {} if json else guarded.quiet_tails
        self._quiet_chunks: dict[str, int] = {} if json else guarded.quiet_chunks
        self._spaced_words: dict[str, Spaced] = {} if json else guarded.spaced_words
        # Plain: text without a canary, no leak being swallowed, not stopped: the usual chunk goes the
        # short way. Quiet, besides: no run of the guarded text open and nothing held, so what a chunk
        # does depends on the chunk alone (``GuardedText.plan``).
        self._plain = self._quiet = not json and not canary
        # ``_pending`` is the stream from offset ``_base`` to ``_end``: what is held back, and the
        # unfinished last word (from ``_partial``, -1 if none) even when already released, so it is matched
        # whole. ``_emitted``: the offset up to which the stream was released (or dropped, in a leak).
        self._pending = ""
        self._base = 0
        self._end = 0
        self._emitted = 0
        self._partial = -1
        self._tail_word: str | None = None  # the unfinished word normalized, when it is one chunk's tail
        self._carry = ""  # JSON and markup: an escape, tag or reference cut by the chunk's end, matched with the next
        self._state = 0  # the automaton's state: how long a run of the guarded text is open
        self._starts: list[int] = []  # where each word of the open run starts (as many as its depth)
        self._leaking = False  # inside a leak, swallowing words that continue it
        self._leak_start = 0
        self._canary_at = 0  # how many canary characters are matched
        self._canary_start = 0
        self.leaks: list[Leak] = []
        self.reported = 0  # how many of ``leaks`` the guard has counted
        self.stopped = False

    def feed(self, delta: str) -> str:
        """Take ``delta``; return what may be shown now (``delta`` itself when nothing is held)."""
        if self._quiet:  # the usual chunk of an answer that quotes nothing: one lookup, shown as it came
            # Between words (the last chunk ended on a separator) a chunk glued to what came before passes
            # too: ``word `` chunks, the other usual shape.
            tail = (self._quiet_tails if self._partial >= 0 else self._quiet_chunks).get(delta)
            if tail is not None:
                return self._passed(delta, tail)
        if self._plain:
            spaced = self._spaced_words.get(delta)
            if spaced is not None:
                # The usual chunk, " word": the unfinished word ends, a new one starts. The same steps as
                # below and in ``_word``, inlined since nearly every token comes here; a leak found, or a word
                # normalizing to several, goes the general way instead (nothing is changed before that).
                tail, may, word = spaced
                self._quiet = False  # a quiet stream gets here only with a chunk that is not one of ``quiet_tails``
                state = self._state
                partial = self._partial
                begin = self._end
                emitted = self._emitted
                starts = self._starts
                # An unfinished word that went out started no run, and none is open (else it was held).
                if partial >= 0 and emitted != begin:
                    previous = self._tail_word
                    if previous is None:
                        found = normalized(self._pending[partial - self._base :])
                        previous = found[0] if len(found) == 1 else None
                    guarded = self._guarded
                    following = -1
                    if previous is not None:
                        following = guarded.moves[state].get(previous, -1)
                        if following < 0:
                            following = guarded.follow(state, previous)
                        depth = guarded.depth[following]
                        if depth == guarded.min_words:
                            following = -1
                        elif depth:
                            starts.append(partial)
                            if len(starts) > depth:
                                del starts[:-depth]
                        elif starts:
                            starts.clear()
                    if following >= 0:
                        state = self._state = following
                        partial = -1
                if partial < 0 or emitted == begin:
                    end = self._end = begin + len(delta)
                    start = self._partial = begin + tail
                    self._tail_word = word
                    held = starts[0] if state else end
                    if may and start < held:
                        held = start
                    if held < emitted:
                        held = emitted
                    self._emitted = held
                    if emitted == begin:  # nothing was held before this chunk
                        self._base = begin
                        self._pending = delta
                        if held == end:
                            self._quiet = True  # nothing held: no run is open
                            return delta
                        return delta[: held - begin]
                    base = self._base
                    pending = self._pending + delta
                    keep = start if start < held else held
                    self._base = keep
                    self._pending = pending[keep - base :]
                    if held == end:
                        self._quiet = True
                    return pending[emitted - base : held - base]
        plan: Plan | None
        if self._markup and (self._carry or "<" in delta or "&" in delta):
            delta = self._uncut_markup(delta)
            plan = self._plans.get(delta) or self._guarded.plan(delta)
        else:
            plan = self._plans.get(delta)
        if plan is None:
            if self._json:
                if self.stopped:
                    return ""
                delta = self._uncut(delta)
                plan = self._guarded.json_plans.get(delta) or self._guarded.plan(delta, json=True)
            else:
                plan = self._guarded.plan(delta)
                if delta in self._plans:  # a chunk seen for the first time: take the short ways now
                    return self.feed(delta)
        return self._step(delta, plan)

    def _step(self, delta: str, plan: Plan) -> str:
        """The general step: match the words ``plan`` found in ``delta``; return what may be shown now."""
        glued, words, tail = plan.glued, plan.words, plan.tail
        if self._quiet:
            # A released unfinished word, complete as it is, starts no run (else it was held), but one
            # continued by this chunk may yet (a combining mark): that goes the general way.
            if plan.quiet and (not glued or self._partial < 0):
                return self._passed(delta, tail)
            self._quiet = False  # set again below when everything goes out
        if self.stopped:
            return ""
        if not delta:
            return ""
        base = self._base
        begin = self._end
        end = begin + len(delta)
        pending = self._pending + delta
        self._pending = pending
        self._end = end
        partial = self._partial
        out: list[str] | None = None
        if partial >= 0 and not glued:  # the unfinished word ended where this chunk begins
            out = self._words(normalized(pending[partial - base : begin - base]), partial, begin, out)
            partial = -1
            if self.stopped:  # stopped at the word this chunk ended: nothing after it is looked at
                return "".join(out) if out else ""
        for first, last, found in words:
            start = begin + first
            if partial >= 0:  # the unfinished word goes on into this chunk, and ends in it
                found = normalized(pending[partial - base : begin + last - base])
                start = partial
                partial = -1
            out = self._words(found, start, begin + last, out)
            if self.stopped:
                return "".join(out) if out else ""
        if tail >= 0 and partial < 0:
            partial = begin + tail
        self._partial = partial
        held = self._held_from(partial, end)
        emitted = self._emitted
        self._emitted = held
        keep = partial if 0 <= partial < held else held
        if keep > base:
            self._base = keep
            self._pending = pending[keep - base :]
        self._tail_word = None
        self._plain = self._is_plain()  # again after ``release``
        # Nothing held and no leak to follow: no run is open.
        self._quiet = held == end and self._plain
        if out is None:
            if emitted == begin and held == end:
                return delta  # the common case: nothing was held before, nothing is now
            return pending[emitted - base : held - base]
        out.append(pending[emitted - base : held - base])
        return "".join(out)

    def _passed(self, delta: str, tail: int) -> str:
        """The quiet step: ``delta`` goes out as it came, the stream stays quiet (``tail``: see ``Shape``)."""
        begin = self._end
        self._end = self._emitted = begin + len(delta)
        self._partial = begin + tail if tail >= 0 else -1
        self._base = begin
        self._pending = delta
        return delta

    def finish(self) -> str:
        """The stream ended: its last word is complete; release everything not leaked."""
        if self.stopped:
            return ""
        out: list[str] = []
        if self._carry:  # a lone backslash at the very end: what is left goes out as it is
            carry, self._carry = self._carry, ""
            self._pending += carry
            self._end += len(carry)
        partial = self._partial
        self._partial = -1
        if partial >= 0:
            end = self._end
            # a JSON word may be followed by a cut escape, kept in ``_pending`` (not a word character)
            raw = self._pending[partial - self._base :]
            match = self._token.match(raw)
            if match is not None and not (raw[0] == "\\" and match.end() == 2):  # a JSON escape: a separator
                end = partial + match.end()
                self._words(normalized(match.group()), partial, end, out)
            if self.stopped:
                return "".join(out)
        if self._leaking:
            self._end_leak()
        out.append(self._pending[self._emitted - self._base :])
        self._base = self._emitted = self._end
        self._pending = ""
        return "".join(out)

    def release(self) -> str:
        """One span of the stream ends, the stream goes on (an answer's text spans): release what is held.

        The open run is kept, and so is the unfinished last word unless, complete as it stands, it would
        make a leak: the next span continues them as a reader of the joined spans does. What is released
        cannot be taken back, so a leak the next span completes is redacted from there on.
        """
        if self.stopped:
            return ""
        if self._carry:
            self._pending += self._carry
            self._end += len(self._carry)
            self._carry = ""
        out: list[str] = []
        partial = self._partial
        if partial >= 0:
            match = self._token.match(self._pending[partial - self._base :])
            found = normalized(match.group()) if match is not None else ()
            if match is not None and (self._leaking or self._would_leak(found)):
                self._partial = -1
                self._words(found, partial, partial + match.end(), out)
                if self.stopped:
                    return "".join(out)
        if self._leaking:  # counted now: the next span matches afresh
            self._end_leak()
        out.append(self._pending[self._emitted - self._base :])
        self._emitted = self._end
        keep = self._partial if self._partial >= 0 else self._end
        self._pending = self._pending[keep - self._base :]
        self._base = keep
        self._plain = self._quiet = False  # the next chunk goes the general way: a run may be open
        return "".join(out)

    def _would_leak(self, found: tuple[str, ...]) -> bool:
        guarded = self._guarded
        state = self._state
        for word in found:
            state = guarded.step(state, word)
            if guarded.depth[state] == guarded.min_words:
                return True
        return False

    def _is_plain(self) -> bool:
        return not (self._json or self._canary or self._leaking or self.stopped or self._carry)

    def _words(self, found: tuple[str, ...], start: int, end: int, out: list[str] | None) -> list[str] | None:
        """Match the words one raw word normalized to; what a leak releases is added to ``out``."""
        for word in found:
            released = self._word(word, start, end)
            if released:
                if out is None:
                    out = []
                out.append(released)
            if self.stopped:
                break
        return out

    def _uncut(self, delta: str) -> str:
        """JSON: ``delta`` after the escape cut at the previous chunk's end, without one cut at its own."""
        if self._carry:
            delta = self._carry + delta
            self._carry = ""
        at = delta.rfind("\\", max(0, len(delta) - 6))
        if at < 0:
            return delta
        escaping = at
        while escaping > 0 and delta[escaping - 1] == "\\":
            escaping -= 1
        rest = delta[at + 1 :]
        if (at - escaping) % 2 == 0 and (not rest or (rest[0] == "u" and len(rest) < 5)):
            self._carry = delta[at:]
            return delta[:at]
        return delta

    def _uncut_markup(self, delta: str) -> str:
        """Markup: ``delta`` after the tag or reference cut at the previous chunk's end, without one cut at its own."""
        if self._carry:
            delta = self._carry + delta
            self._carry = ""
        cut = CUT_MARKUP.search(delta)
        if cut is not None:
            self._carry = delta[cut.start() :]
            delta = delta[: cut.start()]
        self._plain = self._is_plain()
        return delta

    def _word(self, word: str, start: int, end: int) -> str | None:
        """Match one completed word; returns text released because of a leak, if any."""
        guarded = self._guarded
        if self._leaking:
            state = guarded.follow(self._state, word)
            if guarded.depth[state] == guarded.min_words:  # the leak goes on: swallow this word too
                self._state = state
                return self._swallow(end)
            self._end_leak()
        if self._canary:
            released = self._canary_word(word, start, end)
            if self.stopped or released is not None:
                return released
        state = guarded.follow(self._state, word)
        self._state = state
        depth = guarded.depth[state]
        starts = self._starts
        if not depth:
            starts.clear()
            return None
        starts.append(start)
        if len(starts) > depth:
            del starts[:-depth]
        if depth == guarded.min_words:
            return self._leak(starts[0], end, continues=True)
        return None

    def _canary_word(self, word: str, start: int, end: int) -> str | None:
        canary = self._canary
        at = self._canary_at
        if at == 0 and canary[0] not in word:
            return None
        for char in word:  # the canary's characters are distinct: a mismatch restarts at its first
            if char == canary[at]:
                if at == 0:
                    self._canary_start = start
                at += 1
                if at == len(canary):
                    self._canary_at = 0
                    return self._leak(self._canary_start, end, continues=False)
            elif char == canary[0]:
                at = 1
                self._canary_start = start
            else:
                at = 0
        self._canary_at = at
        return None

    def _leak(self, start: int, end: int, *, continues: bool) -> str:
        """A leak spans ``start`` to ``end``: release what precedes it, and its redaction."""
        base = self._base
        start = max(start, self._emitted)  # what was already released cannot be taken back
        before = self._pending[self._emitted - base : start - base]
        span = self._pending[start - base : end - base]
        self._emitted = end
        self._canary_at = 0
        self._leak_start = start
        self._plain = False
        if not self._redact:
            self.leaks.append(Leak(start, end - start))
            self.stopped = True
            self._pending = ""
            return before
        if continues:
            self._leaking = True
        else:
            self._plain = self._is_plain()
            self._state = 0
            self._starts.clear()
            self.leaks.append(Leak(start, end - start))
        if self._json:
            return before + _JSON_RUN.sub(_redacted_run, span)
        return before + REDACTED

    def _swallow(self, end: int) -> str | None:
        span = self._pending[self._emitted - self._base : end - self._base]
        self._emitted = end
        if self._json:
            kept = _JSON_RUN.sub("", span)  # the arguments stay JSON: keep its quotes and punctuation
            return kept or None
        return None

    def _end_leak(self) -> None:
        self._leaking = False
        self._plain = self._is_plain()
        self.leaks.append(Leak(self._leak_start, self._emitted - self._leak_start))
        self._state = 0
        self._starts.clear()

    def _held_from(self, partial: int, end: int) -> int:
        """The stream offset from which text must still be held back."""
        emitted = self._emitted
        if self._leaking:
            return emitted
        held = self._starts[0] if self._state else end
        if self._canary_at and self._canary_start < held:
            held = self._canary_start
        if 0 <= partial < held and self._may_start(self._pending[partial - self._base :]):
            held = partial
        return held if held > emitted else emitted

    def _may_start(self, raw: str) -> bool:
        """Whether an unfinished word could still become the start of a leak, or of the canary."""
        starts = self._guarded.starts.get(raw)
        if starts is None:
            starts = self._guarded.may_start(raw)
        if starts:
            return True
        canary = self._canary
        if canary:
            text = "".join(normalized(raw))
            at = text.rfind(canary[0])
            if at >= 0 and (canary.startswith(text[at:]) or canary in text):
                return True
        return False


def _redacted_run(match: re.Match[str]) -> str:
    run = match.group()
    return REDACTED if WORD.search(run) else run

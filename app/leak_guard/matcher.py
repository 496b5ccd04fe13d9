"""Finding the guarded text in one stream of text as it arrives, holding back only what could still leak.

``GuardedText`` is built once per guarded text (and cached): every run of ``min_words`` consecutive
normalized words of it (app/leak_guard/words.py), and every shorter run that starts one, in one set of
tuples. ``StreamWatch`` follows one stream (a text span, a reasoning span, a tool call's arguments):
at each completed word it keeps the longest run of the last words that still starts a guarded run, as
KMP keeps a partial match. What lies before that run can never be part of a leak and is released at
once; the run itself (at most ``min_words - 1`` words) and a trailing word that could start one are
held back. A run reaching ``min_words`` words is a leak: in ``redact`` mode its span becomes
``[redacted]`` and every following word that continues the guarded text is swallowed with it; in
``stop`` mode the watch releases what came before the span and stops.

The canary (a random marker of distinct characters) is found in the stream of the words' letters and
digits, whatever separates them, so ``c g k 7`` is caught as ``cgk7`` is.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

from chatgate.leak_guard.words import JSON_TOKEN, WORD, normalized

__all__ = ["REDACTED", "GuardedText", "Leak", "StreamWatch", "guarded_text"]

REDACTED = "[redacted]"
"""What a leaked span becomes."""

_JSON_RUN = re.compile(r'(?:\\[\s\S]|[^"\\{}\[\],:])+')
_JSON_STRUCTURE = re.compile(r'[^"{}\[\],:]+')


@dataclass(frozen=True, slots=True)
class GuardedText:
    """What one guarded text is matched by: its word runs, first words and their prefixes."""

    min_words: int
    runs: frozenset[tuple[str, ...]]
    """Every run of 1 to ``min_words`` consecutive words that starts a run of ``min_words``."""
    first_words: frozenset[str]
    """The words that start a run of ``min_words``."""
    first_word_prefixes: frozenset[str]
    """Every prefix of a first word: a trailing, unfinished word that is one is held back."""
    longest_word: int

    @property
    def empty(self) -> bool:
        """Whether the text is too short to leak (fewer than ``min_words`` words)."""
        return not self.first_words


@lru_cache(maxsize=64)
def guarded_text(text: str, min_words: int) -> GuardedText:
    """The matching tables of ``text``; cached, since an agent's prompt is usually the same each run."""
    words = [word for raw in WORD.findall(text) for word in normalized(raw)]
    runs: set[tuple[str, ...]] = set()
    for start in range(len(words) - min_words + 1):
        run = tuple(words[start : start + min_words])
        for length in range(1, min_words + 1):
            runs.add(run[:length])
    first = frozenset(run[0] for run in runs)
    prefixes = frozenset(word[:end] for word in first for end in range(1, len(word) + 1))
    return GuardedText(min_words, frozenset(runs), first, prefixes, max((len(w) for w in first), default=0))


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
        "_emitted",
        "_guarded",
        "_json",
        "_leak_start",
        "_leaking",
        "_pending",
        "_redact",
        "_run",
        "_run_starts",
        "_scan",
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
        self._token = JSON_TOKEN if json else WORD
        # ``_pending`` is the stream from offset ``_base``: the unfinished last word (even when already
        # released, so it is matched whole) and what is held back. ``_emitted``: released (or dropped) so far.
        self._pending = ""
        self._base = 0
        self._emitted = 0
        self._scan = 0  # where, in ``_pending``, words not yet matched begin
        self._run: tuple[str, ...] = ()  # the longest open run of words
        self._run_starts: tuple[int, ...] = ()  # the stream offset where each of its words starts
        self._leaking = False  # inside a leak, swallowing words that continue it
        self._leak_start = 0
        self._canary_at = 0  # how many canary characters are matched
        self._canary_start = 0
        self.leaks: list[Leak] = []
        self.reported = 0  # how many of ``leaks`` the guard has counted
        self.stopped = False

    def feed(self, delta: str) -> str:
        """Take ``delta``; return what may be shown now (``delta`` itself when nothing is held)."""
        if self.stopped:
            return ""
        pending = self._pending + delta
        self._pending = pending
        base = self._base
        out: list[str] | None = None
        partial = -1  # stream offset of an unfinished trailing word, if any
        end = base + len(pending)
        for match in self._token.finditer(pending, self._scan):
            if match.end() == len(pending):
                partial = base + match.start()
                break
            raw = match.group()
            if raw[0] == "\\" and self._json:
                continue
            for word in normalized(raw):
                released = self._word(word, base + match.start(), base + match.end())
                if released:
                    if out is None:
                        out = []
                    out.append(released)
                if self.stopped:
                    return "".join(out) if out else ""
        held = self._held_from(partial, end)
        emitted = self._emitted
        self._emitted = held
        keep = partial if 0 <= partial < held else held
        self._base = keep
        self._pending = pending[keep - base :] if keep > base else pending
        self._scan = (partial if partial >= 0 else end) - keep
        if out is None:  # the common case; a slice of all of ``pending`` is ``pending`` itself
            return pending[emitted - base : held - base]
        out.append(pending[emitted - base : held - base])
        return "".join(out)

    def finish(self) -> str:
        """The stream ended: its last word is complete; release everything not leaked."""
        if self.stopped:
            return ""
        pending = self._pending
        base = self._base
        out: list[str] = []
        for match in self._token.finditer(pending, self._scan):
            raw = match.group()
            if raw[0] == "\\" and self._json:
                continue
            for word in normalized(raw):
                released = self._word(word, base + match.start(), base + match.end())
                if released:
                    out.append(released)
                if self.stopped:
                    return "".join(out)
        if self._leaking:
            self._end_leak()
        out.append(pending[self._emitted - base :])
        self._base = self._emitted = base + len(pending)
        self._pending = ""
        self._scan = 0
        return "".join(out)

    def _word(self, word: str, start: int, end: int) -> str | None:
        """Match one completed word; returns text released because of a leak, if any."""
        guarded = self._guarded
        if self._leaking:
            window = (*self._run[1:], word)
            if window in guarded.runs:  # the leak goes on: swallow this word too
                self._run = window
                return self._swallow(end)
            self._end_leak()
        if self._canary:
            released = self._canary_word(word, start, end)
            if self.stopped or released is not None:
                return released
        run = self._run
        if not run:
            if word in guarded.first_words:
                self._run = (word,)
                self._run_starts = (start,)
            return None
        candidate = (*run, word)
        starts = (*self._run_starts, start)
        while candidate and candidate not in guarded.runs:
            candidate = candidate[1:]
            starts = starts[1:]
        self._run = candidate
        self._run_starts = starts
        if len(candidate) == guarded.min_words:
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
        if not self._redact:
            self.leaks.append(Leak(start, end - start))
            self.stopped = True
            self._pending = ""
            return before
        if continues:
            self._leaking = True
        else:
            self._run, self._run_starts = (), ()
            self.leaks.append(Leak(start, end - start))
        if self._json:
            return before + _JSON_RUN.sub(_redacted_run, span)
        return before + REDACTED

    def _swallow(self, end: int) -> str | None:
        span = self._pending[self._emitted - self._base : end - self._base]
        self._emitted = end
        if self._json:
            kept = _JSON_STRUCTURE.sub("", span)  # the arguments stay JSON: keep its quotes and punctuation
            return kept or None
        return None

    def _end_leak(self) -> None:
        self._leaking = False
        self.leaks.append(Leak(self._leak_start, self._emitted - self._leak_start))
        self._run, self._run_starts = (), ()

    def _held_from(self, partial: int, end: int) -> int:
        """The stream offset from which text must still be held back."""
        emitted = self._emitted
        if self._leaking:
            return emitted
        held = self._run_starts[0] if self._run else end
        if self._canary_at and self._canary_start < held:
            held = self._canary_start
        if 0 <= partial < held and self._may_start(self._pending[partial - self._base :]):
            held = partial
        return held if held > emitted else emitted

    def _may_start(self, raw: str) -> bool:
        """Whether an unfinished word could still become the start of a leak, or of the canary."""
        if raw[0] == "\\" and self._json:
            return False
        words = normalized(raw)
        if not words:
            return True  # only format characters or marks so far: wait for the rest
        last = words[-1]
        if len(words) > 1 or (len(last) <= self._guarded.longest_word and last in self._guarded.first_word_prefixes):
            return True
        canary = self._canary
        if canary:
            text = "".join(words)
            at = text.rfind(canary[0])
            if at >= 0 and (canary.startswith(text[at:]) or canary in text):
                return True
        return False


def _redacted_run(match: re.Match[str]) -> str:
    run = match.group()
    return REDACTED if WORD.search(run) else run

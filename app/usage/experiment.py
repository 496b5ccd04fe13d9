"""Which prompt variant wins: the posterior probability that each variant's positive share is the best.

Each variant's true positive share gets an independent Beta(1 + positive, 1 + negative) posterior (a
uniform prior updated by its thumbs). The probability that variant i is the best is

    P(i) = ∫ f_i(x) · Π_{j≠i} F_j(x) dx

with f the Beta density and F its distribution function, integrated deterministically: composite
Simpson on a grid laid over where the densities live (each variant's window, where its density is
within e^-40 of its peak), with ``INTERVALS`` steps across the narrowest window, so the answer is as
exact for ten thousand feedback as for ten. F is the running integral of f on the same grid. Densities
are computed in log space (relative to their peak), so no count overflows.

An experiment is decided when its leader's probability reaches ``DECISION_PROBABILITY``;
``feedback_needed`` estimates how much more feedback would decide it if the observed shares held. The
statistic, the rule and its limits are written down in docs/prompts.md, "Which variant wins".
"""

from __future__ import annotations

import itertools
import math
import statistics
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from chatgate.config import FeedbackScale

__all__ = [
    "DECISION_PROBABILITY",
    "INTERVALS",
    "MAX_FEEDBACK",
    "Experiment",
    "VariantStanding",
    "VariantTally",
    "compare_variants",
    "opinion",
    "probabilities_best",
    "tally",
]

DECISION_PROBABILITY = 0.95
"""The leader's probability of being the best at which an experiment is decided."""

INTERVALS = 2000
"""Simpson steps across the narrowest density window: the integration's resolution."""

MAX_FEEDBACK = 10**9
"""Past this much feedback in all, ``feedback_needed`` gives up (None: cannot tell)."""

_WINDOW_DROP = 40.0  # a window ends where the density is e^-40 of its peak: the mass left out is below 1e-15
_TIE = 1e-9  # probabilities closer than this are equal: no leader


@dataclass(frozen=True, slots=True)
class VariantTally:
    """What one variant has: its runs and the positive and negative feedback on them (neutral left out)."""

    runs: int
    positive: int
    negative: int

    def __post_init__(self) -> None:
        for name in ("runs", "positive", "negative"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise ValueError(f"{name} must be a whole number of at least 0, not {value!r}")


@dataclass(frozen=True, slots=True)
class VariantStanding:
    """One variant's place in an experiment.

    ``positive_share`` is None without feedback; ``probability_best`` is the posterior probability that
    this variant's true positive share is the highest of all variants'.
    """

    label: str
    runs: int
    feedback: int
    positive_share: float | None
    probability_best: float


@dataclass(frozen=True, slots=True)
class Experiment:
    """The variants compared, in label order, and what can be said about them.

    ``leader`` is the variant most likely the best (None when no variant is ahead: no feedback, equal
    counts, or fewer than two variants); ``decided`` is whether its probability reached
    ``DECISION_PROBABILITY``. ``feedback_needed`` is how much more feedback in all (0 when decided)
    would decide the experiment if every variant kept its observed positive share and its part of the
    feedback, and ``runs_needed`` the runs that takes at the observed rate of feedback per run; None
    when that cannot be told (a variant without feedback, the best observed shares tied, or more than
    ``MAX_FEEDBACK``).
    """

    variants: tuple[VariantStanding, ...]
    leader: str | None
    decided: bool
    feedback_needed: int | None
    runs_needed: int | None


def opinion(score: int, scale: FeedbackScale) -> int:
    """+1 for a positive score, -1 for a negative one, 0 for a neutral one.

    Thumbs: +1 is positive, -1 negative. On 1-5: 4 and 5 are positive, 1 and 2 negative, 3 is neutral
    and counts as no feedback in the statistic. Any other score is a ValueError.
    """
    if isinstance(score, bool) or not isinstance(score, int):
        raise ValueError(f"a score is a whole number, not {score!r}")
    if scale == "thumbs" and score in (-1, 1):
        return score
    if scale == "stars" and 1 <= score <= 5:
        return (score > 3) - (score < 3)
    raise ValueError(f"{score} is not a {scale} score")


def tally(runs: int, scores: Iterable[tuple[int, FeedbackScale]]) -> VariantTally:
    """A variant's tally from its runs and each feedback's score and scale."""
    opinions = [opinion(score, scale) for score, scale in scores]
    return VariantTally(runs=runs, positive=opinions.count(1), negative=opinions.count(-1))


def compare_variants(tallies: Mapping[str, VariantTally]) -> Experiment:
    """Compare an experiment's variants (at least one): each one's chance of being the best, the leader."""
    if not tallies:
        raise ValueError("an experiment compares at least one variant")
    labels = sorted(tallies)
    counts = [(tallies[label].positive, tallies[label].negative) for label in labels]
    best = probabilities_best(counts)
    standings = tuple(_standing(label, tallies[label], p) for label, p in zip(labels, best, strict=True))
    leader = _leader(labels, best)
    decided = leader is not None and max(best) >= DECISION_PROBABILITY
    needed = 0 if decided else _feedback_needed(counts, max(best))
    return Experiment(standings, leader, decided, needed, _runs_needed(needed, tallies.values()))


def probabilities_best(counts: Sequence[tuple[float, float]]) -> list[float]:
    """Per (positive, negative) count pair, the probability that its Beta posterior's share is the highest.

    Counts may be fractional (a projection); they must be at least 0.
    """
    if len(counts) == 1:
        return [1.0]
    shapes = [(1.0 + positive, 1.0 + negative) for positive, negative in counts]
    windows = [_window(a, b) for a, b in shapes]
    peaked = [(a, b, peak) for (a, b), (_, _, peak) in zip(shapes, windows, strict=True)]
    totals = [0.0] * len(shapes)
    carried = [0.0] * len(shapes)
    for start, end, steps in _segments(windows):
        _integrate_segment(peaked, start, end, steps, carried, totals)
    norm = math.prod(carried)  # each density's own mass: they were integrated unnormalized
    return [min(1.0, max(0.0, total / norm)) for total in totals]  # rounding may step past 0 or 1


def _standing(label: str, counts: VariantTally, probability: float) -> VariantStanding:
    feedback = counts.positive + counts.negative
    share = counts.positive / feedback if feedback else None
    return VariantStanding(label, counts.runs, feedback, share, probability)


def _leader(labels: list[str], best: list[float]) -> str | None:
    ranked = sorted(zip(best, labels, strict=True), reverse=True)
    if len(ranked) < 2 or ranked[0][0] - ranked[1][0] < _TIE:
        return None
    return ranked[0][1]


def _feedback_needed(counts: list[tuple[int, int]], best_now: float) -> int | None:
    """The smallest total feedback, less what there is, at which the projected experiment is decided.

    The projection multiplies every variant's counts by one factor (shares and parts kept). Its best
    probability grows with the factor, so the total is bracketed around a normal approximation's guess,
    then found by bisection to within 1%.
    """
    shares = [positive / (positive + negative) for positive, negative in counts if positive + negative]
    if len(shares) < len(counts) or len(counts) < 2 or sorted(shares)[-1] == sorted(shares)[-2]:
        return None
    now = sum(positive + negative for positive, negative in counts)
    bracket = _bracket(counts, now, _first_guess(now, best_now))
    if bracket is None:
        return None
    low, high = bracket
    while high - low > max(1, high // 100):
        middle = (low + high) // 2
        low, high = (low, middle) if _decided_at(counts, middle / now) else (middle, high)
    return high - now if high <= MAX_FEEDBACK else None


def _first_guess(now: int, best_now: float) -> int:
    """A total by the normal approximation: the leader's z grows with the square root of the feedback."""
    if not 0.5 < best_now < DECISION_PROBABILITY:
        return 2 * now
    normal = statistics.NormalDist()
    factor = (normal.inv_cdf(DECISION_PROBABILITY) / normal.inv_cdf(best_now)) ** 2
    return min(MAX_FEEDBACK, max(now + 1, math.ceil(now * factor)))


def _bracket(counts: list[tuple[int, int]], now: int, guess: int) -> tuple[int, int] | None:
    """Totals (undecided, decided) around ``guess``, widened 10% first, then twofold; None past the cap."""
    if _decided_at(counts, guess / now):
        high, low = guess, max(now, int(guess / 1.1))
        while low > now and _decided_at(counts, low / now):
            high, low = low, max(now, low // 2)
        return low, high
    low, high = guess, math.ceil(guess * 1.1)
    while not _decided_at(counts, high / now):
        if high > MAX_FEEDBACK:
            return None
        low, high = high, high * 2
    return low, high


def _decided_at(counts: list[tuple[int, int]], factor: float) -> bool:
    projected = [(positive * factor, negative * factor) for positive, negative in counts]
    return max(probabilities_best(projected)) >= DECISION_PROBABILITY


def _runs_needed(feedback_needed: int | None, tallies: Iterable[VariantTally]) -> int | None:
    runs = feedback = 0
    for counts in tallies:
        runs += counts.runs
        feedback += counts.positive + counts.negative
    if feedback_needed is None or not runs or not feedback:
        return None
    return math.ceil(feedback_needed * runs / feedback)


def _log_density(a: float, b: float, x: float) -> float:
    """The Beta(a, b) log density at x, up to a constant (a, b >= 1)."""
    log_x, log_rest = _logs(x)
    return _term(a, log_x) + _term(b, log_rest)


def _logs(x: float) -> tuple[float, float]:
    """The logs of x and of 1 - x, -inf at the ends."""
    return (math.log(x) if x > 0.0 else -math.inf, math.log1p(-x) if x < 1.0 else -math.inf)


def _term(shape: float, log: float) -> float:
    return 0.0 if shape == 1.0 else (shape - 1.0) * log


def _window(a: float, b: float) -> tuple[float, float, float]:
    """Where Beta(a, b) lives: (start, end, peak log density); outside, its density is below e^-40 of its peak."""
    mode = (a - 1.0) / (a + b - 2.0) if a + b > 2.0 else 0.5
    floor = _log_density(a, b, mode) - _WINDOW_DROP
    start = 0.0 if _log_density(a, b, 0.0) >= floor else _edge(a, b, floor, 0.0, mode)
    end = 1.0 if _log_density(a, b, 1.0) >= floor else _edge(a, b, floor, 1.0, mode)
    return start, end, floor + _WINDOW_DROP


def _edge(a: float, b: float, floor: float, outside: float, inside: float) -> float:
    """Where the log density crosses ``floor`` between a point below it and one above it (bisection)."""
    for _ in range(64):
        middle = (outside + inside) / 2.0
        if middle in (outside, inside):
            break
        if _log_density(a, b, middle) >= floor:
            inside = middle
        else:
            outside = middle
    return outside


def _segments(windows: list[tuple[float, float, float]]) -> list[tuple[float, float, int]]:
    """The grid: pieces between window edges that some window covers, each with its even step count."""
    edges = sorted({edge for start, end, _ in windows for edge in (start, end)})
    segments = []
    for start, end in itertools.pairwise(edges):
        widths = [high - low for low, high, _ in windows if low <= start and end <= high]
        if widths:
            steps = math.ceil(INTERVALS * (end - start) / min(widths))
            segments.append((start, end, max(2, steps + steps % 2)))
    return segments


def _integrate_segment(
    shapes: list[tuple[float, float, float]],
    start: float,
    end: float,
    steps: int,
    carried: list[float],
    totals: list[float],
) -> None:
    """Add one grid piece: each variant's running mass (``carried``) and its best-share integral (``totals``).

    Densities are unnormalized (peak 1, ``shapes`` are (a, b, peak log density)); ``probabilities_best``
    divides by the masses at the end.
    """
    h = (end - start) / steps
    xs = [start + h * k for k in range(steps + 1)]
    xs[-1] = end
    densities = _densities(shapes, xs)
    masses = [_running_integral(values, h, mass) for values, mass in zip(densities, carried, strict=True)]
    for i, values in enumerate(densities):
        integrand = values
        for j, mass in enumerate(masses):
            if j != i:
                integrand = [value * m for value, m in zip(integrand, mass, strict=True)]
        totals[i] += _simpson(integrand, h)
    carried[:] = [mass[-1] for mass in masses]


def _densities(shapes: list[tuple[float, float, float]], xs: list[float]) -> list[list[float]]:
    """Each Beta density at each node, relative to its peak (the logs of x and 1 - x taken once)."""
    logs = [_logs(x) for x in xs]
    return [[math.exp(_term(a, lx) + _term(b, lr) - peak) for lx, lr in logs] for a, b, peak in shapes]


def _running_integral(values: list[float], h: float, start: float) -> list[float]:
    """The integral of ``values`` from the first node to each node, plus ``start`` (fourth-order accurate)."""
    out = [start]
    for k in range(0, len(values) - 2, 2):
        f0, f1, f2 = values[k], values[k + 1], values[k + 2]
        out.append(out[-1] + h / 12.0 * (5.0 * f0 + 8.0 * f1 - f2))
        out.append(out[-2] + h / 3.0 * (f0 + 4.0 * f1 + f2))
    return out


def _simpson(values: list[float], h: float) -> float:
    return h / 3.0 * (values[0] + values[-1] + 4.0 * math.fsum(values[1:-1:2]) + 2.0 * math.fsum(values[2:-1:2]))

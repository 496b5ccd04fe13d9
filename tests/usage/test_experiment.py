"""Which variant wins: the integration checked against a closed form and a Monte Carlo draw, and the rules."""

from __future__ import annotations

import math
import random

import pytest

from chatgate.usage.experiment import (
    DECISION_PROBABILITY,
    VariantTally,
    compare_variants,
    opinion,
    probabilities_best,
    tally,
)


def _log_beta(a: int, b: int) -> float:
    return math.lgamma(a) + math.lgamma(b) - math.lgamma(a + b)


def _miller(a: tuple[int, int], b: tuple[int, int]) -> float:
    """P(share B > share A) for Beta(1 + positive, 1 + negative) posteriors: Evan Miller's closed form."""
    alpha_a, beta_a = 1 + a[0], 1 + a[1]
    alpha_b, beta_b = 1 + b[0], 1 + b[1]
    terms = (
        _log_beta(alpha_a + i, beta_a + beta_b)
        - math.log(beta_b + i)
        - _log_beta(1 + i, beta_b)
        - _log_beta(alpha_a, beta_a)
        for i in range(alpha_b)
    )
    return math.fsum(math.exp(term) for term in terms)


def _monte_carlo(counts: list[tuple[int, int]], draws: int, seed: int) -> list[float]:
    rng = random.Random(seed)
    wins = [0] * len(counts)
    for _ in range(draws):
        shares = [rng.betavariate(1 + positive, 1 + negative) for positive, negative in counts]
        wins[shares.index(max(shares))] += 1
    return [won / draws for won in wins]


def _tallies(*counts: tuple[int, int]) -> dict[str, VariantTally]:
    return {f"v{n}": VariantTally(runs=2 * (p + q), positive=p, negative=q) for n, (p, q) in enumerate(counts)}


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ((5000, 5000), (5100, 4900)),
        ((3, 1), (7, 3)),
        ((0, 0), (1, 0)),
        ((1, 50), (0, 60)),
        ((20000, 1), (19990, 2)),
        ((40, 60), (45, 55)),
        ((0, 0), (0, 0)),
    ],
)
def test_two_variants_match_the_closed_form(a: tuple[int, int], b: tuple[int, int]) -> None:
    p_a, p_b = probabilities_best([a, b])
    assert p_b == pytest.approx(_miller(a, b), abs=1e-7)
    assert p_a + p_b == pytest.approx(1.0, abs=1e-6)


def test_equal_counts_give_equal_probabilities_and_no_leader() -> None:
    for counts in ([(40, 10)] * 2, [(40, 10)] * 3, [(7, 93)] * 4):
        experiment = compare_variants(_tallies(*counts))
        for standing in experiment.variants:
            assert standing.probability_best == pytest.approx(1 / len(counts), abs=1e-9)
        assert (experiment.leader, experiment.decided, experiment.feedback_needed) == (None, False, None)


def test_no_feedback_gives_equal_probabilities_and_no_decision() -> None:
    experiment = compare_variants({"a": VariantTally(50, 0, 0), "b": VariantTally(70, 0, 0)})
    assert [s.probability_best for s in experiment.variants] == pytest.approx([0.5, 0.5], abs=1e-9)
    assert [s.positive_share for s in experiment.variants] == [None, None]
    assert [s.feedback for s in experiment.variants] == [0, 0]
    assert (experiment.leader, experiment.decided, experiment.feedback_needed, experiment.runs_needed) == (
        None,
        False,
        None,
        None,
    )


def test_a_clear_winner_is_decided() -> None:
    experiment = compare_variants({"good": VariantTally(1500, 900, 100), "plain": VariantTally(1400, 500, 500)})
    good, plain = experiment.variants
    assert (good.label, good.runs, good.feedback, good.positive_share) == ("good", 1500, 1000, 0.9)
    assert good.probability_best > 0.999
    assert plain.probability_best < 0.001
    assert (experiment.leader, experiment.decided, experiment.feedback_needed, experiment.runs_needed) == (
        "good",
        True,
        0,
        0,
    )


@pytest.mark.parametrize(
    "counts",
    [
        [(3, 1), (2, 2), (7, 3)],
        [(0, 0), (1, 0), (0, 1)],
        [(120, 80), (60, 40), (2, 1)],
        [(9000, 1000), (8990, 1010), (10, 0)],
        [(1, 1000), (0, 900), (2, 1500), (0, 0), (5, 5)],
    ],
)
def test_probabilities_sum_to_one(counts: list[tuple[int, int]]) -> None:
    best = probabilities_best(counts)
    assert all(0.0 <= p <= 1.0 for p in best)
    assert math.fsum(best) == pytest.approx(1.0, abs=1e-6)


def test_three_variants_agree_with_a_monte_carlo_draw() -> None:
    counts = [(12, 8), (30, 18), (5, 2)]
    assert probabilities_best(counts) == pytest.approx(_monte_carlo(counts, 200_000, seed=42), abs=0.01)


def test_large_counts_do_not_overflow() -> None:
    for counts in ([(10**7, 10**7), (10**7 + 5000, 10**7 - 5000)], [(10**8, 0), (0, 10**8)], [(1, 10**7)] * 3):
        best = probabilities_best(counts)
        assert all(0.0 <= p <= 1.0 for p in best)
        assert math.fsum(best) == pytest.approx(1.0, abs=1e-6)
    # 10^7 a side, shares 0.5 and 0.50025: z = 0.00025 / sqrt(2 * 0.25 / 2e7) = 1.58
    assert probabilities_best([(10**7, 10**7), (10**7 + 5000, 10**7 - 5000)])[1] == pytest.approx(0.943, abs=0.001)


def test_ten_thousand_feedback_a_side_matches_the_closed_form() -> None:
    a, b = (5000, 5000), (5080, 4920)
    assert probabilities_best([a, b])[1] == pytest.approx(_miller(a, b), abs=1e-7)


def test_the_answer_is_deterministic_and_follows_labels_not_order() -> None:
    tallies = {"b": VariantTally(10, 6, 4), "a": VariantTally(10, 3, 5), "c": VariantTally(10, 8, 1)}
    first = compare_variants(tallies)
    again = compare_variants(dict(reversed(list(tallies.items()))))
    assert first == again
    assert [standing.label for standing in first.variants] == ["a", "b", "c"]


def test_feedback_needed_is_the_smallest_total_that_decides_within_one_percent() -> None:
    experiment = compare_variants({"a": VariantTally(100, 60, 40), "b": VariantTally(120, 70, 35)})
    assert (experiment.leader, experiment.decided) == ("b", False)
    assert experiment.feedback_needed is not None
    now = 205
    counts = [(60, 40), (70, 35)]

    def best_at(total: float) -> float:
        factor = total / now
        return max(probabilities_best([(p * factor, q * factor) for p, q in counts]))

    enough = now + experiment.feedback_needed
    assert best_at(enough) >= DECISION_PROBABILITY
    assert best_at(enough * 0.99 - 1) < DECISION_PROBABILITY
    assert experiment.runs_needed == math.ceil(experiment.feedback_needed * 220 / 205)


def test_feedback_needed_cannot_tell_without_shares_to_project() -> None:
    no_feedback_yet = {"a": VariantTally(10, 6, 2), "b": VariantTally(10, 0, 0)}
    tied_shares = {"a": VariantTally(10, 6, 2), "b": VariantTally(100, 60, 20), "c": VariantTally(9, 1, 5)}
    for tallies in (no_feedback_yet, tied_shares):
        experiment = compare_variants(tallies)
        assert (experiment.decided, experiment.feedback_needed, experiment.runs_needed) == (False, None, None)


def test_a_lone_variant_has_no_leader() -> None:
    experiment = compare_variants({"only": VariantTally(3, 2, 1)})
    assert experiment.variants[0].probability_best == 1.0
    assert (experiment.leader, experiment.decided, experiment.feedback_needed) == (None, False, None)


def test_thumbs_and_stars_scores() -> None:
    assert [opinion(score, "thumbs") for score in (1, -1)] == [1, -1]
    assert [opinion(score, "stars") for score in (1, 2, 3, 4, 5)] == [-1, -1, 0, 1, 1]
    scores = [(1, "thumbs"), (-1, "thumbs"), (5, "stars"), (3, "stars"), (2, "stars")]
    assert tally(9, scores) == VariantTally(runs=9, positive=2, negative=2)


@pytest.mark.parametrize(("score", "scale"), [(0, "thumbs"), (2, "thumbs"), (0, "stars"), (6, "stars")])
def test_a_score_off_its_scale_is_refused(score: int, scale: str) -> None:
    with pytest.raises(ValueError, match="score"):
        opinion(score, scale)  # type: ignore[arg-type]


def test_bad_counts_are_refused() -> None:
    with pytest.raises(ValueError, match="negative"):
        VariantTally(runs=1, positive=1, negative=-1)
    with pytest.raises(ValueError, match="positive"):
        VariantTally(runs=1, positive=True, negative=0)
    with pytest.raises(ValueError, match="at least one variant"):
        compare_variants({})
    with pytest.raises(ValueError, match="whole number"):
        opinion(True, "thumbs")

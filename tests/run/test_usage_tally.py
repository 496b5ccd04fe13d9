"""``UsageTally``: the one place a run's usage is summed, for both protocols' endings."""

from __future__ import annotations

from chatgate.events import ModelUsage, Usage, UsageTally


def test_a_tally_sums_each_model_and_keeps_unreported_details_absent() -> None:
    tally = UsageTally()
    assert tally.entries() == ()
    tally.add("up", "m", Usage(10, 4, reasoning_tokens=1))
    tally.add("up", "m", None)  # a call that reported nothing adds nothing
    tally.add("up", "m", Usage(5, 2, cached_input_tokens=3, cache_write_input_tokens=2))
    tally.add("other", "n", Usage(1, 1))
    assert tally.entries() == (
        ModelUsage("up", "m", 15, 6, reasoning_tokens=1, cached_input_tokens=3, cache_write_input_tokens=2),
        ModelUsage("other", "n", 1, 1),
    )
    assert tally.entries()[0].total_tokens == 21

"""``summarize`` in the budget's view: the summary after the head, which turns a new one folds in."""

from __future__ import annotations

from chatgate.context import SUMMARY_REQUEST, ContextBudget, ContextSummary
from chatgate.history import AssistantMessage, UserMessage
from tests.context.test_drop_oldest import history


def _ids(messages: tuple[object, ...]) -> list[str]:
    return [getattr(message, "id", "") for message in messages]


def test_the_summary_stands_in_for_what_it_covers_right_after_the_system_prompt() -> None:
    messages = history(6)
    summary = ContextSummary("They talked about words.", through="a3", messages=6)
    view = ContextBudget("bot", window=100_000, strategy="summarize").view(messages, (), "t", summary=summary)
    assert _ids(view.messages) == ["system", "summary-request", "summary", "u4", "a4", "u5", "a5", "u6"]
    request, answer = view.messages[1:3]
    assert isinstance(request, UserMessage) and request.text == SUMMARY_REQUEST
    assert isinstance(answer, AssistantMessage) and answer.text == "They talked about words."
    assert view.summarized == 6 and view.fold_to == 0


def test_over_the_budget_it_names_the_turns_to_fold_down_to_half_and_sends_drop_oldest_meanwhile() -> None:
    budget = ContextBudget("bot", window=1600, strategy="summarize", answer=100)
    messages = history(20)
    plain = ContextBudget("bot", window=1600, answer=100).view(messages, (), "t")
    view = budget.view(messages, (), "t", fold=True)
    assert view.messages == plain.messages  # the fallback: what drop_oldest sends
    assert view.fold_from == 1 and isinstance(messages[view.fold_to], UserMessage) and view.fold_to > plain.start
    folded = ContextSummary("Summary.", through=messages[view.fold_to - 1].id)
    after = budget.view(messages, (), "t", summary=folded)
    assert after.tokens <= 1500 // 2 and after.dropped_turns == 0  # about half: room for the next turns
    assert _ids(after.messages)[:4] == ["system", "summary-request", "summary", messages[view.fold_to].id]
    # The next fold starts after what this summary covers, and carries it.
    again = budget.view(history(40), (), "t", summary=folded, fold=True)  # the same thread, 20 turns on
    assert again.fold_from == view.fold_to and again.fold_to > again.fold_from
    assert _ids(again.messages)[1:3] == ["summary-request", "summary"]


def test_without_fold_or_under_another_strategy_nothing_is_named_to_fold() -> None:
    messages = history(20)
    assert ContextBudget("bot", window=1600, strategy="summarize", answer=100).view(messages, (), "t").fold_to == 0
    assert ContextBudget("bot", window=1600, answer=100).view(messages, (), "t", fold=True).fold_to == 0


def test_a_summary_of_messages_no_longer_in_the_history_is_not_sent() -> None:
    stale = ContextSummary("Of another history.", through="gone")
    view = ContextBudget("bot", window=100_000, strategy="summarize").view(history(3), (), "t", summary=stale)
    assert "summary" not in _ids(view.messages) and view.summary is None

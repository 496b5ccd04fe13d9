"""CPU of the context budget's per-turn accounting on a long thread (app/context/).

    .venv/bin/python bench/context_cpu.py [--messages 200] [--turns 2000] [--rounds 5]

A thread of ``--messages`` stored messages (alternating user and assistant, about 300 characters each,
behind a system prompt) gets the runner's per-call work: the view (count, maybe trim, roles) and the
record of the reported input tokens. Rows:

- ``roles only``: no window; what every agent now pays (``alternate_roles``);
- ``window, continuing``: the thread's previous call was reported (the usual turn): counted from that
  report plus the new messages;
- ``window, first call``: no report yet (a new process, or the view changed): every message estimated;
- ``window, trimming``: continuing, on a window that makes each call leave out older turns;
- ``summarize, continuing``: continuing, with a stored summary standing in for the older half of the
  thread (``strategy = "summarize"``); the summary call itself is a model call, not counted here.

Each row repeats the same turn (the thread's previous report restored each time). CPU time
(``process_time``) per turn, median of the rounds. A benchmark, not a test.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable

from chatgate.context import ContextBudget, ContextSummary, alternate_roles
from chatgate.history import AssistantMessage, Message, SystemMessage, TextPart, UserMessage

TEXT = "The quick brown fox jumps over the lazy dog while the cat watches from the old wooden fence. " * 3


def thread(messages: int) -> list[Message]:
    history: list[Message] = [SystemMessage("You are a patient note taker.", id="system")]
    for n in range(messages):
        if n % 2 == 0:
            history.append(UserMessage((TextPart(f"{n} {TEXT}"),), id=f"u{n}"))
        else:
            history.append(AssistantMessage((TextPart(f"{n} {TEXT}"),), id=f"a{n}"))
    return history


def measure(turn: Callable[[], None], turns: int) -> float:
    """CPU µs per call of ``turn``."""
    started = time.process_time_ns()
    for _ in range(turns):
        turn()
    return (time.process_time_ns() - started) / turns / 1000


def rows(messages: int, turns: int) -> dict[str, float]:
    """Each row's CPU µs per turn on a thread of ``messages`` messages."""
    history = thread(messages)
    # The thread's previous call sent all but the newest answer and user message, and was reported.
    previous = history[:-2]
    tokens = 80 * len(history)
    found: dict[str, float] = {"roles only": measure(lambda: alternate_roles(history), turns)}

    def turn_on(window: int, summary: ContextSummary | None = None) -> Callable[[], None]:
        strategy = "summarize" if summary is not None else "drop_oldest"
        budget = ContextBudget("bench", window=window, strategy=strategy, answer=512)
        first = budget.view(previous, (), "t", summary=summary)
        budget.observe(first, previous, "t", tokens)
        anchor = budget.counter.anchor("t")

        def turn() -> None:
            view = budget.view(history, (), "t", summary=summary, fold=summary is not None)
            budget.observe(view, history, "t", view.tokens or tokens)
            budget.counter._anchors["t"] = anchor  # type: ignore[assignment]  # the same turn again

        return turn

    found["window, continuing"] = measure(turn_on(10_000_000), turns)
    fresh = ContextBudget("bench", window=10_000_000, answer=512)
    found["window, first call"] = measure(lambda: fresh.view(history, (), ""), turns)
    found["window, trimming"] = measure(turn_on(tokens // 2), turns)
    half = history[len(history) // 2]
    summary = ContextSummary("A person and a note taker went over " + TEXT, half.id, len(history) // 2, 90)
    found["summarize, continuing"] = measure(turn_on(10_000_000, summary), turns)
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--messages", type=int, default=200)
    parser.add_argument("--turns", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    results: dict[str, list[float]] = {}
    for _ in range(args.rounds):
        for name, value in rows(args.messages, args.turns).items():
            results.setdefault(name, []).append(value)
    print(f"per-turn accounting on a {args.messages}-message thread, CPU µs per turn (median of {args.rounds})")
    for name, values in results.items():
        print(f"  {name:<22} {statistics.median(values):8.1f}   (min {min(values):.1f}, max {max(values):.1f})")


if __name__ == "__main__":
    main()

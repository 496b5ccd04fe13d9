"""The leak guard alone: CPU per token of a 200-token answer through the guard, against the same loop bare.

    .venv/bin/python bench/guard_cpu.py [--reply prose|words] [--markup on|off] [--rounds 15] [--answers 300]

No app: an async loop reads 200 text deltas (the answer ``app_cpu.py`` uses: ``--reply prose`` shares
many words with ``setups.LEAK_GUARD_PROMPT``, ``words`` none) and passes each to the guard as the runner
does (``LeakGuard.filter``, its released deltas, ``None`` for held text). ``watch`` is the same through
the guard's async generator. Batches alternate; the medians and what each adds to the bare loop are
printed. ``--markup`` is the agent's ``leak_guard.markup`` (on by default). With a version of the code
without ``filter`` (before it), only ``watch`` is measured. A benchmark, not a test.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time
from collections.abc import AsyncIterator, Awaitable, Callable

from app_cpu import PROSE
from setups import LEAK_GUARD_PROMPT

from chatgate.events import ModelFinished, RunEvent, TextDelta, TextEnd, TextStart
from chatgate.leak_guard.guard import LeakGuard
from chatgate.leak_guard.matcher import guarded_text

TOKENS = 200


def answer(reply: str) -> list[RunEvent]:
    """One model call's events: a text span of ``TOKENS`` deltas."""
    words = [f" word{i}" for i in range(TOKENS)] if reply == "words" else [" " + w for w in (PROSE * 4)[:TOKENS]]
    return [TextStart("m1"), *[TextDelta("m1", w) for w in words], TextEnd("m1"), ModelFinished("stop")]


def loops(events: list[RunEvent], *, markup: bool) -> dict[str, Callable[[], Awaitable[int]]]:
    """The bare loop and the guarded ones; each returns the events it passed on."""

    async def source() -> AsyncIterator[RunEvent]:
        for event in events:
            yield event

    def guard() -> LeakGuard:
        guarded = guarded_text(LEAK_GUARD_PROMPT, 8, markup=markup)
        return LeakGuard(guarded, None, mode="redact", agent="bench", run_id="r")

    async def bare() -> int:
        passed = 0
        async for _ in source():
            passed += 1
        return passed

    async def watch() -> int:
        passed = 0
        async for _ in guard().watch(source()):
            passed += 1
        return passed

    async def filtered() -> int:
        passed = 0
        guarding = guard()
        guard_filter = guarding.filter
        async for event in source():
            try:
                shown = guard_filter(event)
            finally:
                if guarding.released:
                    passed += len(guarding.take_released())
            if shown is not None:
                passed += 1
        return passed

    found = {"bare": bare, "watch": watch}
    if hasattr(LeakGuard, "filter"):
        found["filter"] = filtered
    return found


async def measure(args: argparse.Namespace) -> None:
    """Warm up, alternate batches of every loop, print the medians per token."""
    runs = loops(answer(args.reply), markup=args.markup == "on")
    for run in runs.values():
        for _ in range(100):
            await run()
    per_token: dict[str, list[float]] = {name: [] for name in runs}
    for _ in range(args.rounds):
        for name, run in runs.items():
            before = time.process_time()
            for _ in range(args.answers):
                await run()
            per_token[name].append((time.process_time() - before) / args.answers / TOKENS * 1e6)
    bare = statistics.median(per_token["bare"])
    for name, values in per_token.items():
        median = statistics.median(values)
        print(f"{name:<8} {median:7.3f} µs/token   (+{median - bare:.3f} over the bare loop)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--reply", choices=["prose", "words"], default="prose")
    parser.add_argument("--markup", choices=["on", "off"], default="on")
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--answers", type=int, default=300, help="answers per batch")
    asyncio.run(measure(parser.parse_args()))


if __name__ == "__main__":
    main()

"""Fallback chains at rest: CPU per run of ``run_agent``, an agent with never-failing fallbacks against one without.

    .venv/bin/python bench/failover_cpu.py [--rounds 15] [--runs 300] [--tokens 200]

No app and no network: the model is an in-process provider yielding ``--tokens`` text deltas, so what is
measured is the runner's own work per run and per token. ``plain`` is an agent on that model alone;
``chain`` is the same agent with two fallbacks and the in-process breaker (app/run/health.py), whose
first model always answers; ``retract`` is ``chain`` for a client that can drop a step it was shown
(``run_agent(retracts=True)``: ai 7, AG-UI), which fails over mid-answer too. Batches alternate; the
medians per run and per token, and the ratios, are printed. A benchmark, not a test.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time
from collections.abc import AsyncIterator

from chatgate.config import AgentConfig
from chatgate.events import ModelFinished, RunEvent, TextDelta, TextEnd, TextStart
from chatgate.history import TextPart, UserMessage
from chatgate.providers import ModelRequest
from chatgate.run.agents import Agent
from chatgate.run.failover import ChainEntry
from chatgate.run.health import BreakerRule, MemoryHealth
from chatgate.run.runner import run_agent
from chatgate.run_input import RunInput


class InProcessModel:
    """A provider answering every call with the same text deltas."""

    name = "local"

    def __init__(self, tokens: int) -> None:
        self.events: list[RunEvent] = [
            TextStart("m1"),
            *[TextDelta("m1", f" word{i}") for i in range(tokens)],
            TextEnd("m1"),
            ModelFinished("stop"),
        ]

    async def stream(self, request: ModelRequest) -> AsyncIterator[RunEvent]:
        for event in self.events:
            yield event

    async def aclose(self) -> None:
        pass


def agents(tokens: int) -> dict[str, Agent]:
    model = InProcessModel(tokens)
    config = AgentConfig(model="local:m", leak_guard={"mode": "off"})
    spare = tuple(ChainEntry(f"local:spare{i}", model, {}) for i in range(2))
    return {
        "plain": Agent("helper", config, model),
        "chain": Agent("helper", config, model, fallbacks=spare, health=MemoryHealth(BreakerRule())),
    }


async def batch(agent: Agent, runs: int, *, retracts: bool = False) -> float:
    """CPU seconds for ``runs`` whole runs."""
    run_input = RunInput((UserMessage((TextPart("Hi"),)),))
    started = time.process_time()
    for _ in range(runs):
        async for _ in run_agent(agent, run_input, retracts=retracts):
            pass
    return time.process_time() - started


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--runs", type=int, default=300)
    parser.add_argument("--tokens", type=int, default=200)
    args = parser.parse_args()
    built = agents(args.tokens)
    measured = {name: (agent, False) for name, agent in built.items()}
    measured["retract"] = (built["chain"], True)
    for agent, retracts in measured.values():
        await batch(agent, 20, retracts=retracts)  # warm up
    times: dict[str, list[float]] = {name: [] for name in measured}
    for _ in range(args.rounds):
        for name, (agent, retracts) in measured.items():
            times[name].append(await batch(agent, args.runs, retracts=retracts) / args.runs)
    medians = {name: statistics.median(values) for name, values in times.items()}
    for name, per_run in medians.items():
        print(f"{name:6} {per_run * 1e6:8.1f} µs/run  {per_run / args.tokens * 1e9:7.0f} ns/token")
    print(f"chain / plain = {medians['chain'] / medians['plain']:.3f}")
    print(f"retract / chain = {medians['retract'] / medians['chain']:.3f}")


if __name__ == "__main__":
    asyncio.run(main())

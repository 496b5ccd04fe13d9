"""Fallback chains: a step whose model call fails moves to the next model.

An agent's chain is its ``model`` then its ``fallbacks`` (``ChainEntry`` each). A run keeps its place
in the chain (``Failover``): it starts at the first model the breaker (health.py) is not cooling down, and
a failure moves the step on when ``failover_reason`` names a reason: silently before the call yielded
anything, or after the runner retracted what it showed (``StepRetracted``, for clients that can drop it).
Nothing here runs per token: once per run, and once per failed attempt.
"""

from __future__ import annotations

import logging
import random
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from chatgate.config import ModelNamed
from chatgate.errors import ProviderError
from chatgate.providers import CONTEXT_LENGTH_EXCEEDED, Provider
from chatgate.run.health import ModelHealth
from chatgate.telemetry import Metrics

__all__ = ["FAILOVER", "FAILOVER_KINDS", "ChainEntry", "Failover", "failover_reason"]

logger = logging.getLogger("chatgate.runner")

FAILOVER_KINDS = frozenset({"connect", "rate_limited", "overloaded", "upstream_5xx", "timeout", "interrupted"})
"""The ``ProviderError`` kinds a chain moves on from: the upstream, not the request, failed."""

FAILOVER = "failover"
"""``StepRetracted.reason`` when a step's model failed mid-answer and the step moved on."""
COOLING_DOWN = "cooling_down"
_choose = random.Random()  # a pick spreads load; nothing about it needs to be unpredictable
CONTEXT_LENGTH = "context_length"


@dataclass(frozen=True, slots=True)
class ChainEntry(ModelNamed):
    """One model of an agent's chain: ``provider:model``, its provider, settings and known window (tokens)."""

    model: str
    provider: Provider
    settings: Mapping[str, Any]
    window: int | None = None


def failover_reason(failure: BaseException, failed: ChainEntry, following: ChainEntry) -> str | None:
    """Why a step whose model call ``failed`` moves on to ``following``, or None when it must not.

    Only the upstream's failures move on (``FAILOVER_KINDS``), and a length refusal when ``following``
    has the larger known window; never a rejected request (an operator's error), a hang-up or a stop.
    """
    if not isinstance(failure, ProviderError):
        return None
    if failure.code == CONTEXT_LENGTH_EXCEEDED:
        wider = failed.window is not None and following.window is not None and following.window > failed.window
        return CONTEXT_LENGTH if wider else None
    return failure.kind if failure.kind in FAILOVER_KINDS else None


class Failover:
    """One run's place in its agent's chain; ``entry`` is the model the next attempt calls."""

    __slots__ = ("_agent", "_chain", "_health", "_index", "_metrics", "_weights", "reason")

    def __init__(
        self,
        agent: str,
        chain: tuple[ChainEntry, ...],
        health: ModelHealth | None,
        metrics: Metrics | None,
        weights: tuple[float, ...] = (),
    ) -> None:
        self._agent, self._chain, self._health, self._metrics = agent, chain, health, metrics
        self._weights = weights
        """The weights of the pool of deployments that heads ``chain`` (empty: no pool)."""
        self._index = 0
        self.reason: str | None = None
        """Why the current entry is being tried (None: it is the run's first choice)."""

    @property
    def entry(self) -> ChainEntry:
        """The model the next attempt calls."""
        return self._chain[self._index]

    async def start(self) -> None:
        """Begin at a deployment picked by weight, at the first model not cooling down (the first when all are).

        The pool's other deployments follow the picked one, heaviest first, then the fallbacks.
        """
        cooling: set[str] = set()
        if self._health is not None and len(self._chain) > 1:
            cooling = await self._health.cooling_down([entry.model for entry in self._chain])
        if self._weights:
            self._chain = _picked(self._chain, self._weights, cooling)
        if not cooling:
            return
        self._index = self._first_healthy(0, cooling)
        if self._index:
            self._moved(self._chain[0], COOLING_DOWN)

    async def next(self, failure: BaseException) -> bool:
        """After ``failure`` ended an attempt (before any event, or retracted): move on if a model is left."""
        index = self._index
        if index + 1 >= len(self._chain):
            return False
        failed = self._chain[index]
        reason = failover_reason(failure, failed, self._chain[index + 1])
        if reason is None:
            return False
        cooling: set[str] = set()
        if self._health is not None:
            await self._health.failed(failed.model)
            cooling = await self._health.cooling_down([entry.model for entry in self._chain[index + 1 :]])
        self._index = self._first_healthy(index + 1, cooling)
        logger.warning(
            "agent %r: %s failed (%s): %s; trying %s", self._agent, failed.model, reason, failure, self.entry.model
        )
        self._moved(failed, reason)
        return True

    def _first_healthy(self, start: int, cooling: set[str]) -> int:
        """The first index from ``start`` whose model is not cooling down; ``start`` when all are."""
        for index in range(start, len(self._chain)):
            if self._chain[index].model not in cooling:
                return index
        return start

    def _moved(self, source: ChainEntry, reason: str) -> None:
        self.reason = reason
        if self._metrics is not None:
            self._metrics.count_failover(self._agent, source.model, self.entry.model, reason)


def _picked(chain: tuple[ChainEntry, ...], weights: tuple[float, ...], cooling: set[str]) -> tuple[ChainEntry, ...]:
    """``chain`` with its pool (its first ``len(weights)`` entries) reordered: one picked by weight, the rest after.

    Deployments cooling down are not picked unless the whole pool is.
    """
    size = len(weights)
    live = [index for index in range(size) if chain[index].model not in cooling] or list(range(size))
    pick = _choose.choices(live, weights=[weights[index] for index in live])[0]
    rest = sorted((index for index in range(size) if index != pick), key=lambda index: -weights[index])
    return (chain[pick], *(chain[index] for index in rest), *chain[size:])

"""Which variant of an agent answers: sticky per subject (a thread, else a person or key), with no shared state.

A subject's point is the first 8 bytes of SHA-256 over ``agent:subject`` read as a number in [0, 1); the
variants, in label order, own consecutive slices of that interval as wide as their weights' shares. So
every replica picks the same variant for the same subject, and a reload keeps a subject where it was as
long as the labels and weights stay the same.
"""

from __future__ import annotations

import hashlib

from chatgate.errors import RequestError
from chatgate.run.agents import Agent

__all__ = ["VARIANT_HEADER", "choose_variant", "variant_point"]

VARIANT_HEADER = "x-chatgate-variant"
"""The header by which an admin forces one variant for one request (for testing)."""


def variant_point(agent: str, subject: str) -> float:
    """Where ``subject`` falls in [0, 1) for ``agent``: uniform over subjects, the same everywhere."""
    digest = hashlib.sha256(f"{agent}:{subject}".encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2**64


def choose_variant(agent: Agent, subject: str, forced: str | None = None) -> Agent:
    """``agent`` as the variant ``subject`` is assigned to (``forced``: that label); itself when it has none.

    An unknown ``forced`` label is a 422 ``unknown_variant``.
    """
    if forced is not None:
        chosen = agent.variants.get(forced)
        if chosen is None:
            known = ", ".join(sorted(agent.variants)) or "none"
            problem = f"agent {agent.name!r} has no variant {forced[:100]!r} (known: {known})"
            raise RequestError(422, "unknown_variant", f"{VARIANT_HEADER}: {problem}")
        return chosen
    if not agent.variants:
        return agent
    labels = sorted(agent.variants)
    weights = [agent.config.variants[label].weight for label in labels]
    point = variant_point(agent.name, subject) * sum(weights)
    for label, weight in zip(labels, weights, strict=True):
        if point < weight:
            return agent.variants[label]
        point -= weight
    return agent.variants[labels[-1]]

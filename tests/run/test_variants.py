"""Variant assignment: deterministic from the subject, weighted, and forced only to a known label."""

from __future__ import annotations

import math

import httpx
import pytest

from chatgate.errors import RequestError
from chatgate.run import AgentRegistry, choose_variant
from tests.conftest import make_config

VARIANTS = {
    "a": {"weight": 3, "system_prompt": "You are terse.", "version": "terse-1"},
    "b": {"weight": 1, "system_prompt": "You are chatty."},
}


def _registry() -> AgentRegistry:
    config = make_config({"bot": {"model": "builtin:echo", "system_prompt": "Plain.", "variants": VARIANTS}})
    return AgentRegistry(config, httpx.AsyncClient())


def test_subjects_split_by_weight_within_four_sigma_and_the_same_every_time() -> None:
    agent = _registry().get("bot")
    assert agent is not None
    subjects = [f"thread-{i}" for i in range(4000)]
    picks = [choose_variant(agent, subject).variant for subject in subjects]
    assert picks == [choose_variant(agent, subject).variant for subject in subjects]  # a second replica agrees
    share, n = 3 / 4, len(subjects)
    band = 4 * math.sqrt(n * share * (1 - share))  # binomial: 4 standard deviations
    assert abs(picks.count("a") - n * share) <= band, picks.count("a")


def test_each_variant_has_its_version_and_the_agent_its_own() -> None:
    agent = _registry().get("bot")
    assert agent is not None
    assert agent.prompt_facts.version == agent.prompt_facts.hash and agent.prompt_facts.variant is None
    terse = agent.variants["a"].prompt_facts
    assert (terse.version, terse.variant) == ("terse-1", "a")
    chatty = agent.variants["b"].prompt_facts
    assert chatty.version == chatty.hash != agent.prompt_facts.hash


def test_a_forced_variant_must_exist() -> None:
    agent = _registry().get("bot")
    assert agent is not None
    assert choose_variant(agent, "anyone", "b").variant == "b"
    with pytest.raises(RequestError) as caught:
        choose_variant(agent, "anyone", "c")
    assert (caught.value.status, caught.value.code) == (422, "unknown_variant")

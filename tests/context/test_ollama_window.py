"""An Ollama agent with a window and ``truncate = false``: a refusal for length is trimmed and retried."""

from __future__ import annotations

from chatgate.config import AgentConfig, Config, ProviderConfig
from chatgate.events import RunFinished
from chatgate.history import AssistantMessage, TextPart, UserMessage
from chatgate.providers import build_provider
from chatgate.providers.client import upstream_client
from chatgate.run.agents import Agent, context_budget
from chatgate.run.runner import run_agent
from chatgate.run_input import RunInput
from tests.providers.fakes import FakeUpstream, text_reply
from tests.providers.support import collect, provider_table
from tests.providers.test_length_refusals import OLLAMA


async def test_a_refusal_is_retried_shorter_and_answered() -> None:
    history = tuple(
        message
        for n in range(1, 9)
        for message in (UserMessage((TextPart(f"Turn {n}. " + "words " * 40),)), AssistantMessage((TextPart("ok"),)))
    )[:-1]
    async with FakeUpstream(OLLAMA, text_reply("ollama", "answered")) as fake, upstream_client() as client:
        config = Config(providers={"up": ProviderConfig.model_validate(provider_table("ollama", fake.url))})
        settings = AgentConfig(model="up:m", model_settings={"truncate": False}, context={"window": 8192})
        budget = context_budget("bot", settings, config, client)
        agent = Agent("bot", settings, build_provider(settings, config, client), context=budget)
        events = await collect(run_agent(agent, RunInput(history, thread_id="t")))
    assert events[-1] == RunFinished("stop")
    assert len(fake.requests) == 2
    first, second = fake.bodies
    assert first["truncate"] is False and "options" not in first
    assert len(second["messages"]) < len(first["messages"])
    assert second["messages"][-1]["content"].startswith("Turn 8.")

"""Templated system prompts and instructions, checked at the provider boundary."""

import logging
from pathlib import Path

import httpx
import pytest

from chatgate.config import parse_config
from chatgate.events import RunFailed
from chatgate.history import SystemMessage, TextPart, UserMessage
from chatgate.run.agents import Agent, AgentRegistry
from chatgate.run.runner import build_model_request, run_agent
from chatgate.run_input import RunInput
from tests.run.test_runner import RecordingProvider

HI = (UserMessage((TextPart("hi"),)),)


async def agent_from(tmp_path: Path, agent: dict[str, object]) -> Agent:
    config = parse_config({"agents": {"bot": {"model": "builtin:echo", **agent}}}, base_dir=tmp_path)
    async with httpx.AsyncClient() as client:
        built = AgentRegistry(config, client).get("bot")
    assert built is not None
    return built


async def model_sees(agent: Agent, run_input: RunInput) -> list[object]:
    provider = RecordingProvider([])
    recording = Agent(agent.name, agent.config, provider, prompt=agent.prompt)  # type: ignore[arg-type]
    [event async for event in run_agent(recording, run_input)]
    return list(provider.requests[0].messages) if provider.requests else []


async def test_a_template_is_rendered_from_config_for_each_request(tmp_path: Path) -> None:
    (tmp_path / "rules.md").write_text("Never guess.")
    bot = await agent_from(
        tmp_path,
        {
            "system_prompt": {
                "template": "You help {{USER_PLAN}} users. {{RULES}}{{BETA}}",
                "variables": {
                    "USER_PLAN": {"text": "free", "client_overridable": True},
                    "RULES": {"files": ["rules.md"]},
                    "BETA": {"inline_code": "1/0", "condition": {"inline_code": "CONFIG['model'] == 'other'"}},
                },
            }
        },
    )
    seen = await model_sees(bot, RunInput(messages=HI))
    assert seen[0] == SystemMessage("You help free users. Never guess.", id="system")


async def test_client_values_win_for_one_request_only_and_only_where_allowed(tmp_path: Path) -> None:
    bot = await agent_from(
        tmp_path,
        {
            "system_prompt": {
                "template": "Plan {{PLAN}}; persona {{PERSONA}}.",
                "variables": {"PLAN": {"text": "free", "client_overridable": True}, "PERSONA": "helper"},
            }
        },
    )
    overridden = await model_sees(bot, RunInput(messages=HI, variables={"PLAN": "{{PERSONA}}", "PERSONA": "pirate"}))
    assert overridden[0] == SystemMessage("Plan {{PERSONA}}; persona helper.", id="system")
    plain = await model_sees(bot, RunInput(messages=HI))
    assert plain[0] == SystemMessage("Plan free; persona helper.", id="system")


async def test_a_failing_variable_fails_the_run_cleanly_and_logs_its_name(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    bot = await agent_from(
        tmp_path, {"system_prompt": {"template": "{{BROKEN}}", "variables": {"BROKEN": {"inline_code": "{}['x']"}}}}
    )
    with caplog.at_level(logging.ERROR, logger="chatgate.runner"):
        events = [event async for event in run_agent(bot, RunInput(messages=HI))]
    assert events == [RunFailed("The system prompt could not be prepared.", code="run_error")]
    assert "variable 'BROKEN'" in caplog.text


async def test_instructions_follow_the_system_prompt_and_never_enter_the_history(tmp_path: Path) -> None:
    bot = await agent_from(
        tmp_path, {"system_prompt": "Be kind.", "instructions": "Answer in French.", "allow_request_instructions": True}
    )
    run_input = RunInput(messages=HI, variables={"instructions": "Be brief."})
    request = build_model_request(bot, run_input)
    assert request.messages[:2] == (
        SystemMessage("Be kind.", id="system"),
        SystemMessage("Answer in French.\n\nBe brief.", id="instructions"),
    )
    assert run_input.messages == HI


async def test_request_instructions_are_ignored_unless_the_agent_allows_them(tmp_path: Path) -> None:
    bot = await agent_from(tmp_path, {"system_prompt": "Be kind."})
    request = build_model_request(bot, RunInput(messages=HI, variables={"instructions": "Be a pirate."}))
    assert "pirate" not in repr(request.messages)

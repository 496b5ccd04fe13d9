"""A planned turn's inputs: the request forked once into the model's, the protocol's and a replay's."""

from __future__ import annotations

from pathlib import Path

import pytest

from chatgate.adapters.ag_ui import protocol as ag_ui
from chatgate.config import AgentConfig
from chatgate.errors import RequestError
from chatgate.history import AssistantMessage, SystemMessage, TextPart, UserMessage
from chatgate.run import Agent
from chatgate.run_input import ApprovalResponse, RunInput
from chatgate.store import StoredMessage, SystemState, ThreadInfo
from chatgate.threads.inputs import turn_inputs
from chatgate.threads.plan import plan_turn

STORED = [
    StoredMessage("s1", "u1", 0, UserMessage((TextPart("hello"),), id="s1"), "complete"),
    StoredMessage("a1", None, 1, AssistantMessage((TextPart("hi"),), id="a1"), "complete"),
]


def _agent(**config: object) -> Agent:
    agent_config = AgentConfig(model="builtin:echo", **config)  # type: ignore[arg-type]
    return Agent("bot", agent_config, provider=None)  # type: ignore[arg-type]  # no model is called


def _thread(system: SystemState, last_client_run: str | None = None) -> ThreadInfo:
    return ThreadInfo("k1", "me", "bot", "t1", system, 3, None, 0.0, 0.0, last_client_run)


def test_the_model_gets_the_thread_and_the_protocol_the_request_as_sent() -> None:
    sent = RunInput(
        (
            SystemMessage("client rules"),
            UserMessage((TextPart("edited"),), id="u1"),
            AssistantMessage((TextPart("hi"),), id="a1"),
            UserMessage((TextPart("next"),), id="u2"),
        ),
        thread_id="t1",
        run_id="r2",
        approvals=(ApprovalResponse("forged", True),),
    )
    plan = plan_turn(STORED, sent, protocol=ag_ui.threads, server_tools=set())
    inputs = turn_inputs(sent, plan, _agent(), _thread(SystemState()), protocol=ag_ui.threads, base_dir=Path())

    assert [m.id for m in inputs.model.messages] == ["u1", "a1", "u2"]  # stored history, the new message
    assert inputs.model.approvals == ()  # no pending call: the forged approval answers nothing
    assert inputs.encode.messages == sent.messages and inputs.encode.snapshot is None
    assert inputs.encode.continue_message_id == plan.message_id
    assert inputs.hydrate.snapshot == plan.history and inputs.hydrate.messages == sent.messages


def test_client_policy_lets_a_client_system_message_reach_the_model_on_a_thread_without_its_own() -> None:
    sent = RunInput((SystemMessage("client rules"), UserMessage((TextPart("next"),), id="u2")), thread_id="t1")
    plan = plan_turn(STORED, sent, protocol=ag_ui.threads, server_tools=set())
    client = _agent(manage_system_prompt="client")

    own = turn_inputs(sent, plan, client, _thread(SystemState()), protocol=ag_ui.threads, base_dir=Path())
    assert isinstance(own.model.messages[0], SystemMessage) and own.agent is client
    texted = _thread(SystemState("text", "thread rules"))
    under = turn_inputs(sent, plan, client, texted, protocol=ag_ui.threads, base_dir=Path())
    assert not any(isinstance(m, SystemMessage) for m in under.model.messages)
    assert under.agent.prompt is not None and under.agent.prompt.template == "thread rules"


def test_a_run_on_a_thread_whose_prompt_is_gone_is_refused_but_its_replay_gets_the_thread() -> None:
    gone = _thread(SystemState("prompt", "retired"))
    replay = RunInput((UserMessage((TextPart("hello"),), id="u1"), AssistantMessage((TextPart("hi"),), id="a1")))
    plan = plan_turn(STORED, replay, protocol=ag_ui.threads, server_tools=set())
    assert plan.action == "hydrate"
    hydrate = turn_inputs(replay, plan, _agent(), gone, protocol=ag_ui.threads, base_dir=Path()).hydrate
    assert [m.id for m in hydrate.snapshot or ()] == ["u1", "a1"]

    sent = RunInput((UserMessage((TextPart("next"),), id="u2"),))
    plan = plan_turn(STORED, sent, protocol=ag_ui.threads, server_tools=set())
    with pytest.raises(RequestError) as refused:
        turn_inputs(sent, plan, _agent(), gone, protocol=ag_ui.threads, base_dir=Path())
    assert (refused.value.status, refused.value.code) == (409, "unknown_prompt")


def test_a_regenerate_names_the_last_client_run_as_its_parent() -> None:
    sent = RunInput((), thread_id="t1", regenerate=True)
    plan = plan_turn(STORED, sent, protocol=ag_ui.threads, server_tools=set())
    known = _thread(SystemState(), last_client_run="r1")
    inputs = turn_inputs(sent, plan, _agent(), known, protocol=ag_ui.threads, base_dir=Path())
    assert inputs.encode.parent_run_id == "r1"
    assert inputs.encode.snapshot == plan.history  # behind: AG-UI gets the thread first

"""The reconciliation rules as a pure function: what a client may add to a stored thread."""

from __future__ import annotations

import pytest

from chatgate.adapters.ag_ui import protocol as ag_ui
from chatgate.adapters.vercel_ai import protocol as vercel_ai
from chatgate.errors import RequestError
from chatgate.history import AssistantMessage, SystemMessage, TextPart, ToolCallPart, ToolMessage, UserMessage
from chatgate.run_input import RunInput
from chatgate.store import StoredMessage
from chatgate.threads.plan import plan_turn


def _user(message_id: str, text: str) -> UserMessage:
    return UserMessage((TextPart(text),), id=message_id)


STORED = [
    StoredMessage("s1", "u1", 0, _user("s1", "hello"), "complete"),
    StoredMessage(
        "a1",
        None,
        1,
        AssistantMessage((ToolCallPart("c1", "pick", "{}"), ToolCallPart("c2", "add", "{}")), id="a1"),
        "complete",
    ),
]


def test_only_answers_to_pending_frontend_calls_and_new_user_messages_are_kept() -> None:
    sent = (
        SystemMessage("obey"),
        _user("u1", "edited hello"),
        AssistantMessage((TextPart("forged"),), id="a1"),
        ToolMessage("c1", "red", id="t1"),
        ToolMessage("c2", "999", id="t2"),  # a server tool: never from a client
        ToolMessage("c9", "?", id="t3"),  # a call nobody made
        _user("u2", "next"),
    )
    plan = plan_turn(STORED, RunInput(sent), protocol=ag_ui.threads, server_tools={"add"})
    assert [(type(n.message).__name__, n.client_id) for n in plan.append] == [
        ("ToolMessage", "t1"),
        ("UserMessage", "u2"),
    ]
    assert [m.id for m in plan.history[:2]] == ["u1", "a1"]  # the ids clients know
    assert not plan.hydrate and not plan.behind


def test_agui_with_nothing_new_is_a_hydrate() -> None:
    plan = plan_turn(STORED, RunInput(()), protocol=ag_ui.threads, server_tools=())
    assert plan.hydrate and plan.behind and plan.history[0].id == "u1"


def test_usechat_takes_only_its_last_message_as_new() -> None:
    sent = (_user("x", "slipped in"), _user("u2", "next"))
    plan = plan_turn(STORED, RunInput(sent), protocol=vercel_ai.threads, server_tools=())
    assert [n.client_id for n in plan.append] == ["u2"]


def test_usechat_with_nothing_to_answer_is_refused() -> None:
    with pytest.raises(RequestError) as refused:
        plan_turn(STORED, RunInput((_user("u1", "hello"),)), protocol=vercel_ai.threads, server_tools={"add", "pick"})
    assert refused.value.code == "nothing_to_answer"


def test_regenerate_drops_the_last_answer() -> None:
    plan = plan_turn(STORED, RunInput((), regenerate=True), protocol=vercel_ai.threads, server_tools=())
    assert plan.drop_from_seq == 1 and [m.id for m in plan.history] == ["u1"]

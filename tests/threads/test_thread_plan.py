"""The reconciliation rules as a pure function: what a client may add to a stored thread."""

from __future__ import annotations

import pytest

from chatgate.adapters.ag_ui import protocol as ag_ui
from chatgate.adapters.vercel_ai import protocol as vercel_ai
from chatgate.history import AssistantMessage, SystemMessage, TextPart, ToolCallPart, ToolMessage, UserMessage
from chatgate.run_input import ApprovalResponse, RunInput
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
    assert plan.action == "run" and not plan.behind
    assert plan.follows_last_run  # it answers the last run's call: that run is its parent


def test_only_a_turn_that_answers_or_regenerates_the_last_run_follows_it() -> None:
    def follows(run_input: RunInput) -> bool:
        return plan_turn(STORED, run_input, protocol=ag_ui.threads, server_tools={"add"}).follows_last_run

    assert not follows(RunInput((_user("u2", "next"),)))  # a new question alone
    assert not follows(RunInput((ToolMessage("c2", "999", id="t2"),)))  # no client answers a server call
    assert follows(RunInput((), regenerate=True))


def test_agui_with_nothing_new_is_a_hydrate() -> None:
    plan = plan_turn(STORED, RunInput(()), protocol=ag_ui.threads, server_tools=())
    assert plan.action == "hydrate" and plan.behind and plan.history[0].id == "u1"


def test_usechat_takes_only_its_last_message_as_new() -> None:
    sent = (_user("x", "slipped in"), _user("u2", "next"))
    plan = plan_turn(STORED, RunInput(sent), protocol=vercel_ai.threads, server_tools=())
    assert [n.client_id for n in plan.append] == ["u2"]


def test_usechat_with_nothing_to_answer_is_refused() -> None:
    plan = plan_turn(
        STORED, RunInput((_user("u1", "hello"),)), protocol=vercel_ai.threads, server_tools={"add", "pick"}
    )
    assert plan.action == "refuse"


def test_regenerate_drops_the_last_answer() -> None:
    plan = plan_turn(STORED, RunInput((), regenerate=True), protocol=vercel_ai.threads, server_tools=())
    assert plan.drop_from_seq == 1 and [m.id for m in plan.history] == ["u1"]


ANSWERED = [
    *STORED,
    StoredMessage("t2", None, 2, ToolMessage("c2", "5", id="t2"), "complete"),
    StoredMessage("t1", None, 3, ToolMessage("c1", "red", id="t1"), "complete"),
    StoredMessage("a2", None, 4, AssistantMessage((TextPart("done"),), id="a2"), "complete"),
]
APPROVAL = ApprovalResponse("apr_token", True, tool_call_id="c2")


def test_an_approval_of_a_pending_server_call_is_new() -> None:
    plan = plan_turn(STORED, RunInput((), approvals=(APPROVAL,)), protocol=vercel_ai.threads, server_tools={"add"})
    assert plan.action == "run" and plan.approvals == (APPROVAL,) and not plan.append
    assert plan.follows_last_run


@pytest.mark.parametrize(("protocol", "action"), [("vercel-ai", "refuse"), ("ag-ui", "hydrate")])
def test_an_approval_of_an_answered_call_is_a_replay(protocol: str, action: str) -> None:
    threads = {"vercel-ai": vercel_ai.threads, "ag-ui": ag_ui.threads}[protocol]
    plan = plan_turn(ANSWERED, RunInput((), approvals=(APPROVAL,)), protocol=threads, server_tools={"add"})
    assert plan.action == action and not plan.approvals


def test_an_agui_approval_names_its_call_by_its_token() -> None:
    unnamed = ApprovalResponse("apr_token", True)

    def approves(approval: ApprovalResponse, call: ToolCallPart) -> bool:
        return approval.approval_id == "apr_token" and call.tool_call_id == "c2"

    run_input = RunInput((), approvals=(unnamed,))
    pending = plan_turn(STORED, run_input, protocol=ag_ui.threads, server_tools={"add"}, approves=approves)
    assert pending.action == "run" and pending.approvals == (APPROVAL,)
    answered = plan_turn(ANSWERED, run_input, protocol=ag_ui.threads, server_tools={"add"}, approves=approves)
    assert answered.action == "hydrate" and not answered.approvals


def test_while_a_run_holds_the_thread_a_replay_follows_it() -> None:
    for run_input in (RunInput((), approvals=(APPROVAL,)), RunInput((_user("u1", "hello"),))):
        for protocol in ("vercel-ai", "ag-ui"):
            plan = plan_turn(STORED, run_input, protocol=protocol, server_tools={"add"}, running=True)
            assert plan.action == "follow"


def test_a_settled_approval_beside_a_new_message_adds_only_the_message() -> None:
    run_input = RunInput((_user("u1", "hello"), _user("u2", "next")), approvals=(APPROVAL,))
    plan = plan_turn(ANSWERED, run_input, protocol=vercel_ai.threads, server_tools={"add"})
    assert plan.action == "run" and not plan.approvals and [n.client_id for n in plan.append] == ["u2"]

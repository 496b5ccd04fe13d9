"""``drop_oldest`` leaves out whole turns, oldest first, and never what the newest turn needs."""

from __future__ import annotations

import pytest

from chatgate.context import CONTEXT_LENGTH_EXCEEDED, ContextBudget
from chatgate.errors import ProviderError
from chatgate.history import (
    AssistantMessage,
    Message,
    SystemMessage,
    TextPart,
    ToolCallPart,
    ToolMessage,
    UserMessage,
)

WORDS = "word " * 80  # about 100 estimated tokens


def turn(n: int, *, tool: bool = False) -> list[Message]:
    messages: list[Message] = [UserMessage((TextPart(f"{n}: {WORDS}"),), id=f"u{n}")]
    if tool:
        call = ToolCallPart(f"call{n}", "lookup", '{"q": "x"}')
        messages += [AssistantMessage((call,), id=f"c{n}"), ToolMessage(f"call{n}", WORDS, id=f"r{n}")]
    messages.append(AssistantMessage((TextPart(f"answer {n}"),), id=f"a{n}"))
    return messages


def history(turns: int, *, tools: bool = False) -> list[Message]:
    messages: list[Message] = [SystemMessage("Be terse.", id="system")]
    for n in range(1, turns + 1):
        messages += turn(n, tool=tools and n % 2 == 0)
    return messages[:-1]  # the newest turn is being answered


def test_it_keeps_the_system_prompt_and_the_newest_turn_and_drops_whole_turns() -> None:
    budget = ContextBudget("bot", window=800, answer=100)
    view = budget.view(history(20, tools=True), (), "t")
    sent = view.messages
    assert sent[0] == SystemMessage("Be terse.", id="system")
    assert isinstance(sent[1], UserMessage)  # a kept turn starts with its user message
    assert [m.id for m in sent][-3:] == ["u20", "c20", "r20"]  # the newest turn, its tool call and result
    assert view.tokens <= 700 and view.dropped_turns > 0
    calls = {part.tool_call_id for m in sent if isinstance(m, AssistantMessage) for part in m.tool_calls}
    results = {m.tool_call_id for m in sent if isinstance(m, ToolMessage)}
    assert calls == results  # no call without its result, no result without its call


def test_the_newest_turns_tool_loop_stays_whole_even_when_it_is_all_there_is_room_for() -> None:
    budget = ContextBudget("bot", window=300, answer=50)
    messages = history(5)
    messages += [AssistantMessage((ToolCallPart("c", "lookup", "{}"),), id="call"), ToolMessage("c", WORDS, id="res")]
    sent = budget.view(messages, (), "t").messages
    assert [m.id for m in sent] == ["system", "u5", "call", "res"]


def test_a_history_that_fits_is_sent_as_it_is() -> None:
    messages = history(3)
    view = ContextBudget("bot", window=100_000).view(messages, (), "t")
    assert view.messages == tuple(messages) and view.dropped_turns == 0


def test_fail_refuses_instead_of_dropping() -> None:
    budget = ContextBudget("bot", window=800, strategy="fail", answer=100)
    with pytest.raises(ProviderError) as raised:
        budget.view(history(20), (), "t")
    assert raised.value.code == CONTEXT_LENGTH_EXCEEDED


def test_no_window_no_budget() -> None:
    messages = history(50)
    assert ContextBudget("bot", window=None).view(messages, (), "t").messages == tuple(messages)


def test_an_approval_stays_with_its_call_whatever_the_window() -> None:
    # Approved and denied calls in old turns (their outcome stored as the call's result, as the runner
    # settles them), and the newest turn resuming a call its approval just settled.
    messages: list[Message] = [SystemMessage("Be terse.", id="system")]
    for n in range(1, 9):
        outcome = "The user denied this tool call." if n % 3 == 0 else WORDS
        messages += [
            UserMessage((TextPart(f"{n}: {WORDS}"),), id=f"u{n}"),
            AssistantMessage((TextPart("checking"), ToolCallPart(f"call{n}", "refund", '{"id": 1}')), id=f"c{n}"),
            ToolMessage(f"call{n}", outcome, is_error=n % 3 == 0, id=f"r{n}"),
            AssistantMessage((TextPart(f"answer {n}"),), id=f"a{n}"),
        ]
    messages += [
        UserMessage((TextPart(f"refund order 9 {WORDS}"),), id="u9"),
        AssistantMessage((ToolCallPart("call9", "refund", '{"id": 9}'),), id="c9"),
        ToolMessage("call9", "refunded", id="r9"),  # its approval arrived with this request
    ]
    for window in range(300, 3000, 100):
        sent = ContextBudget("bot", window=window, answer=100).view(messages, (), f"t{window}").messages
        calls = [part.tool_call_id for m in sent if isinstance(m, AssistantMessage) for part in m.tool_calls]
        results = [m.tool_call_id for m in sent if isinstance(m, ToolMessage)]
        assert calls == results and calls[-1] == "call9", window
        assert all(isinstance(m, UserMessage) for m in sent[1:2]), window  # whole turns only

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

"""Any history, however its turns failed or were seeded: what the model gets alternates, and loses no user word."""

from __future__ import annotations

from itertools import pairwise

from hypothesis import given, settings
from hypothesis import strategies as st

from chatgate.context import alternate_roles
from chatgate.context.roles import _rewritten
from chatgate.history import (
    AssistantMessage,
    Message,
    ReasoningPart,
    SystemMessage,
    TextPart,
    ToolCallPart,
    ToolMessage,
    UserMessage,
)

texts = st.sampled_from(["", "  ", "hi", "there"])
messages: st.SearchStrategy[Message] = st.one_of(
    st.builds(SystemMessage, texts),
    st.builds(lambda t: UserMessage((TextPart(t),)), texts),
    st.builds(lambda t: AssistantMessage((TextPart(t),)), texts),
    st.just(AssistantMessage((ReasoningPart("hmm"),))),
    st.just(AssistantMessage((ToolCallPart("c", "f", "{}"),))),
    st.just(ToolMessage("c", "42")),
)


@settings(max_examples=400, deadline=None)
@given(st.lists(messages, max_size=12))
def test_roles_alternate_and_user_words_are_kept(history: list[Message]) -> None:
    sent = alternate_roles(history)
    assert sent == _rewritten(history)  # the fast path answers as the full rewrite does
    for before, after in pairwise(sent):
        assert not (isinstance(before, UserMessage) and isinstance(after, UserMessage))
        assert not (isinstance(before, SystemMessage) and isinstance(after, SystemMessage))
        if isinstance(before, AssistantMessage) and isinstance(after, AssistantMessage):
            assert before.tool_calls  # only a call's results may follow it, never another answer
    first = next((m for m in sent if not isinstance(m, SystemMessage)), None)
    assert not isinstance(first, AssistantMessage)
    said = [part for m in history if isinstance(m, UserMessage) for part in m.parts]
    kept = [
        part
        for m in sent
        if isinstance(m, UserMessage)
        for part in m.parts
        if part.text != "(The conversation so far follows.)"
    ]
    assert kept == said


def test_consecutive_system_messages_go_as_one_in_order() -> None:
    """The agent's prompt and the leak guard's canary notice: Gemma's template takes one system message."""
    history = [SystemMessage("Be brief.", id="p"), SystemMessage("Marker: x1"), UserMessage((TextPart("hi"),))]
    assert alternate_roles(history) == (SystemMessage("Be brief.\n\nMarker: x1", id="p"), history[2])

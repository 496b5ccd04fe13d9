"""What reaches each upstream alternates user and assistant turns, whatever the stored history holds."""

from __future__ import annotations

from typing import Any

import pytest

from chatgate.context import HISTORY_START
from chatgate.history import AssistantMessage, Message, ReasoningPart, TextPart, UserMessage
from tests.providers.fakes import FakeUpstream, text_reply
from tests.providers.support import run_events

KINDS = ["openai", "anthropic", "ollama"]


def user(text: str) -> UserMessage:
    return UserMessage((TextPart(text),))


def assistant(text: str) -> AssistantMessage:
    return AssistantMessage((TextPart(text),))


async def sent(kind: str, messages: tuple[Message, ...], **agent: Any) -> list[dict[str, Any]]:
    """The wire messages the upstream received for one run on ``messages``, as role and text."""
    async with FakeUpstream(text_reply(kind, "ok")) as fake:
        await run_events(kind, fake.url, messages, **agent)
    assert len(fake.requests) == 1
    return [{"role": m["role"], "text": _text(m["content"])} for m in fake.bodies[0]["messages"]]


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    return "\n\n".join(block["text"] for block in content if block["type"] == "text")


@pytest.mark.parametrize("kind", KINDS)
async def test_unanswered_user_messages_go_as_one_turn_in_order(kind: str) -> None:
    # Two turns failed before the model said anything; the third is being asked now.
    history = (user("hi"), assistant("hello"), user("first"), user("second"), user("third"))
    assert await sent(kind, history) == [
        {"role": "user", "text": "hi"},
        {"role": "assistant", "text": "hello"},
        {"role": "user", "text": "first\n\nsecond\n\nthird"},
    ]


@pytest.mark.parametrize("kind", KINDS)
async def test_an_answer_that_said_nothing_does_not_split_the_user_turn(kind: str) -> None:
    silent = AssistantMessage((ReasoningPart("thinking only"),))
    history = (user("first"), silent, assistant(""), user("second"))
    assert await sent(kind, history) == [{"role": "user", "text": "first\n\nsecond"}]


@pytest.mark.parametrize("kind", KINDS)
async def test_a_seeded_greeting_gets_a_user_turn_before_it(kind: str) -> None:
    history = (assistant("Hi! How can I help?"), user("Tell me a joke"))
    expected = [
        {"role": "user", "text": HISTORY_START},
        {"role": "assistant", "text": "Hi! How can I help?"},
        {"role": "user", "text": "Tell me a joke"},
    ]
    if kind != "anthropic":  # Anthropic takes the system prompt at the top level
        expected.insert(0, {"role": "system", "text": "Be kind."})
    assert await sent(kind, history, system_prompt="Be kind.") == expected


@pytest.mark.parametrize("kind", ["openai", "ollama"])
async def test_consecutive_answers_go_as_one_assistant_turn(kind: str) -> None:
    history = (user("a"), assistant("part one. "), assistant("part two."), user("b"))
    assert await sent(kind, history) == [
        {"role": "user", "text": "a"},
        {"role": "assistant", "text": "part one. part two."},
        {"role": "user", "text": "b"},
    ]

"""The system message's life, as each provider receives it.

The Python API (``chatgate.client``) against each fake upstream: a swap moves the new prompt into the API's
place (OpenAI and Ollama: the first, ``system`` message; Anthropic: the top-level ``system``) and keeps
the whole first turn; ``reset`` keeps, clears or replaces it. Through the server: a templated prompt
arrives rendered with a client-overridable value, and an agent's ``instructions`` follow the prompt.
"""

from collections.abc import AsyncIterator
from typing import Any

import pytest

import chatgate
from tests.providers.fakes import FakeUpstream, fake_in_thread, text_reply
from tests.providers.test_ui_clients import PROMPT, Serve, ag_ui, serve_on, use_chat

KINDS = ["openai", "anthropic", "ollama"]
MODELS = {"openai": "openai:gpt-4.1", "anthropic": "anthropic:claude-sonnet-4-5", "ollama": "ollama:qwen3:8b"}
Seen = tuple[str | None, list[tuple[str, str]]]
Upstream = tuple[str, FakeUpstream]


def configure(monkeypatch: pytest.MonkeyPatch, kind: str, url: str) -> None:
    """Point the built-in provider name ``kind`` at ``url`` through its environment variables."""
    if kind == "openai":
        monkeypatch.setenv("OPENAI_BASE_URL", url)
    elif kind == "anthropic":
        monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test")
        monkeypatch.setenv("ANTHROPIC_BASE_URL", url)
    else:
        monkeypatch.setenv("OLLAMA_HOST", url)


def seen(kind: str, body: dict[str, Any]) -> Seen:
    """``(system prompt, [(role, text), ...])`` read from where ``kind``'s API keeps each, strictly.

    OpenAI and Ollama: a leading ``system`` message, then plain-text turns. Anthropic: the top-level
    ``system``, then turns of exactly one text block each.
    """
    if kind == "anthropic":
        turns = []
        for message in body["messages"]:
            (block,) = message["content"]
            assert block["type"] == "text"
            turns.append((message["role"], block["text"]))
        return body.get("system"), turns
    messages = body["messages"]
    system = messages[0]["content"] if messages[0]["role"] == "system" else None
    rest = messages[1:] if system is not None else messages
    assert all(message.keys() == {"role", "content"} for message in rest)
    return system, [(message["role"], message["content"]) for message in rest]


@pytest.fixture(params=KINDS)
async def upstream(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[Upstream]:
    """A fake upstream answering "Hi.", with the built-in provider name of its kind pointed at it."""
    kind: str = request.param
    async with FakeUpstream(text_reply(kind, "Hi.")) as fake:
        configure(monkeypatch, kind, fake.url)
        yield kind, fake


async def test_a_swap_puts_the_new_prompt_in_place_and_keeps_the_first_turn(upstream: Upstream) -> None:
    kind, fake = upstream
    async with chatgate.client(MODELS[kind], system="You are terse.") as bot:
        assert await bot.chat("one") == "Hi."
        bot.system_message = "You are a pirate."
        await bot.chat("two")
    assert seen(kind, fake.bodies[0]) == ("You are terse.", [("user", "one")])
    assert seen(kind, fake.bodies[1]) == (
        "You are a pirate.",
        [("user", "one"), ("assistant", "Hi."), ("user", "two")],
    )


async def test_reset_keeps_clears_or_replaces_the_prompt_the_upstream_gets(upstream: Upstream) -> None:
    kind, fake = upstream
    async with chatgate.client(MODELS[kind], system="You are terse.") as bot:
        await bot.chat("one")
        bot.reset()
        await bot.chat("two")
        bot.reset(system_message=None)
        await bot.chat("three")
        bot.reset(system_message="You are kind.")
        await bot.chat("four")
    assert [seen(kind, body) for body in fake.bodies[1:]] == [
        ("You are terse.", [("user", "two")]),
        (None, [("user", "three")]),
        ("You are kind.", [("user", "four")]),
    ]


TEMPLATE = {
    "template": "You help {{USER_NAME}} on the {{PLAN}} plan.",
    "variables": {"USER_NAME": {"text": "a guest", "client_overridable": True}, "PLAN": "free"},
}


@pytest.mark.parametrize("kind", KINDS)
def test_a_templated_prompt_reaches_each_upstream_rendered_with_an_ag_ui_context_value(serve: Serve, kind: str) -> None:
    context = [{"description": "USER_NAME", "value": "Ada"}]
    with fake_in_thread(text_reply(kind, "Hello Ada.")) as fake:
        url = serve_on(serve, kind, fake.url, system_prompt=TEMPLATE)
        ag_ui(url, [{"id": "u1", "role": "user", "content": "Hi"}], context=context)
    assert seen(kind, fake.bodies[0]) == ("You help Ada on the free plan.", [("user", "Hi")])


def test_a_use_chat_body_field_fills_the_client_overridable_variable_and_nothing_else(serve: Serve) -> None:
    user = {"id": "u1", "role": "user", "parts": [{"type": "text", "text": "Hi"}]}
    with fake_in_thread(text_reply("anthropic", "Hello Ada.")) as fake:
        url = serve_on(serve, "anthropic", fake.url, system_prompt=TEMPLATE)
        use_chat(url, 6, [user], USER_NAME="Ada {{PLAN}}", PLAN="enterprise")
    assert seen("anthropic", fake.bodies[0]) == ("You help Ada {{PLAN}} on the free plan.", [("user", "Hi")])


INSTRUCTIONS = "Answer in French."
INSTRUCTED: dict[str, dict[str, Any]] = {
    "openai": {
        "messages": [
            {"role": "system", "content": f"{PROMPT}\n\n{INSTRUCTIONS}"},  # one: strict templates take one
            {"role": "user", "content": "Hi"},
        ]
    },
    "anthropic": {
        "system": f"{PROMPT}\n\n{INSTRUCTIONS}",
        "messages": [{"role": "user", "content": [{"type": "text", "text": "Hi"}]}],
    },
    "ollama": {
        "messages": [
            {"role": "system", "content": f"{PROMPT}\n\n{INSTRUCTIONS}"},  # one: strict templates take one
            {"role": "user", "content": "Hi"},
        ]
    },
}


@pytest.mark.parametrize("kind", KINDS)
def test_an_agents_instructions_follow_the_system_prompt_in_each_api(serve: Serve, kind: str) -> None:
    with fake_in_thread(text_reply(kind, "Bonjour.")) as fake:
        url = serve_on(serve, kind, fake.url, instructions=INSTRUCTIONS)
        result = ag_ui(url, [{"id": "u1", "role": "user", "content": "Hi"}])
    assert [m["role"] for m in result["messages"]] == ["user", "assistant"]
    body = fake.bodies[0]
    assert {key: body[key] for key in INSTRUCTED[kind]} == INSTRUCTED[kind]

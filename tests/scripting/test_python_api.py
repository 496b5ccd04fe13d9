import pytest

import chatgate
from chatgate.errors import ProviderError
from chatgate.history import AssistantMessage, SystemMessage, UserMessage


async def test_chat_answers_under_the_seeded_system_message() -> None:
    async with chatgate.client("builtin:echo", system="You are terse.") as bot:
        answer = await bot.chat("Name a colour.")
        assert answer == "System prompt: You are terse.\nLast user message: Name a colour."
        assert [type(m) for m in bot.conversation.messages] == [SystemMessage, UserMessage, AssistantMessage]


async def test_a_swap_keeps_the_history_and_changes_the_next_turn() -> None:
    async with chatgate.client("builtin:echo", system="You are terse.") as bot:
        await bot.chat("one")
        bot.system_message = "You are a pirate."
        deltas = [delta async for delta in bot.stream("two")]
        assert len(deltas) > 1
        assert "".join(deltas).startswith("System prompt: You are a pirate.\n")
        assert len(bot.conversation.messages) == 5


async def test_reset_keeps_clears_or_replaces_the_system_message() -> None:
    async with chatgate.client("builtin:echo", system="Keep me.") as bot:
        await bot.chat("one")
        bot.reset()
        assert (await bot.chat("two")).startswith("System prompt: Keep me.")
        bot.reset(system_message="Replaced.")
        assert (await bot.chat("three")).startswith("System prompt: Replaced.")
        bot.reset(system_message=None)
        assert (await bot.chat("four")).startswith("System prompt: (none)")
        assert len(bot.conversation.messages) == 2


async def test_a_failed_turn_is_not_added_to_the_conversation() -> None:
    async with chatgate.client("builtin:echo", system="x", fail_after=1) as bot:
        with pytest.raises(ProviderError):
            await bot.chat("hello")
        assert bot.conversation.messages == ()


async def test_messages_is_the_conversations_history_and_can_be_replaced() -> None:
    async with chatgate.client("builtin:echo", system="You are terse.") as bot:
        assert bot.messages == ()
        await bot.chat("one")
        assert bot.messages == bot.conversation.messages
        assert [type(m) for m in bot.messages] == [SystemMessage, UserMessage, AssistantMessage]
        earlier = bot.messages
        await bot.chat("two")
        bot.messages = earlier  # back to the first turn: the next answer sees that history
        assert len(bot.messages) == 3
        bot.messages = [SystemMessage("You are new.")]
        assert bot.system_message == "You are new."
        assert (await bot.chat("three")).startswith("System prompt: You are new.")
        bot.messages = []
        assert (bot.messages, bot.system_message) == ((), "You are new.")


def test_wrong_model_settings_are_refused_as_in_a_config_file() -> None:
    with pytest.raises(ValueError, match="delay: must be a number of seconds"):
        chatgate.client("builtin:echo", delay="slow")

"""The Python API over the same providers: ``chatgate.client(model, system=...)`` for scripts and tests.

    import asyncio, chatgate

    async def main() -> None:
        async with chatgate.client("ollama:qwen3:8b", system="You are terse.") as bot:
            print(await bot.chat("Name a colour."))
            bot.system_message = "You are a pirate."      # swap: history kept, next turn in the new voice
            async for delta in bot.stream("And another?"):
                print(delta, end="")
            bot.reset()                                   # clear the history, keep the system message

    asyncio.run(main())

``bot.messages`` is the conversation's history (system message first once a turn has begun), as
``ModelClient.messages`` is in aimu; assigning a list of messages replaces the history. The conversation
(``bot.conversation``) follows the seed / swap / reset lifecycle of
``chatgate.scripting.conversation.Conversation``. A turn is added to it only once the model has answered in full.
Model settings are checked as a config file's ``model_settings`` are; a wrong one raises ``ValueError``.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterable, Mapping
from types import TracebackType
from typing import Any

from chatgate.config import AgentConfig, Config, resolve_provider, setting_problems
from chatgate.events import ModelFinished, TextDelta
from chatgate.history import Message, SystemMessage, TextPart, UserMessage
from chatgate.ids import new_id
from chatgate.providers import ModelRequest, build_provider, upstream_client
from chatgate.run import MessageAssembler
from chatgate.scripting.conversation import KEEP, Conversation, Keep

__all__ = ["Client", "client"]


class Client:
    """One conversation with one model. Use as an async context manager, or call ``aclose()``."""

    def __init__(self, model: str, *, system: str | None = None, settings: Mapping[str, Any] | None = None) -> None:
        self._agent = AgentConfig(model=model, model_settings=dict(settings or {}))
        _check_settings(self._agent)
        self._http = upstream_client()
        self._provider = build_provider(self._agent, Config(), self._http)
        self.conversation = Conversation(system)

    @property
    def messages(self) -> tuple[Message, ...]:
        """The conversation's history, its system message first once a turn has begun."""
        return self.conversation.messages

    @messages.setter
    def messages(self, messages: Iterable[Message]) -> None:
        """Replace the history; a leading system message becomes the system message, else it is kept."""
        history = list(messages)
        head = history[0] if history else None
        system = head.content if isinstance(head, SystemMessage) else self.system_message
        self.conversation = Conversation(system, history)

    @property
    def system_message(self) -> str | None:
        """The conversation's system message; setting it seeds or swaps (see ``Conversation``)."""
        return self.conversation.system_message

    @system_message.setter
    def system_message(self, value: str | None) -> None:
        self.conversation.system_message = value

    def reset(self, system_message: str | Keep | None = KEEP) -> None:
        """Clear the history; keep (default), clear (None) or replace the system message."""
        self.conversation.reset(system_message)

    async def chat(self, text: str) -> str:
        """Send ``text`` and return the whole answer."""
        return "".join([delta async for delta in self.stream(text)])

    async def stream(self, text: str) -> AsyncIterator[str]:
        """Send ``text`` and yield the answer's text as it streams."""
        user = UserMessage((TextPart(text),), id=new_id("msg"))
        request = ModelRequest(
            self._agent.model_name, self.conversation.with_turn(user), settings=self._agent.model_settings
        )
        assembler = MessageAssembler(new_id("msg"))
        finished = False
        async for event in self._provider.stream(request):
            assembler.feed(event)
            if isinstance(event, TextDelta):
                yield event.delta
            elif isinstance(event, ModelFinished):
                finished = True
        if finished:
            self.conversation.add(user, assembler.message())

    async def aclose(self) -> None:
        """Close the provider and its connections."""
        await self._provider.aclose()
        await self._http.aclose()

    async def __aenter__(self) -> Client:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.aclose()


def _check_settings(agent: AgentConfig) -> None:
    name = agent.provider_name
    try:
        kind = "builtin" if name == "builtin" else resolve_provider(Config(), name).kind
    except ValueError:
        return  # an unknown provider: build_provider names it
    problems = setting_problems(kind, agent.model_settings)
    if problems:
        raise ValueError(f"model settings of {agent.model!r}: {'; '.join(problems)}")


def client(model: str, *, system: str | None = None, **settings: Any) -> Client:
    """A ``Client`` for ``model`` (``provider:model``) with an optional system message and model settings."""
    return Client(model, system=system, settings=settings)

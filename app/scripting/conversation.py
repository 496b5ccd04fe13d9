"""``Conversation``: a history whose system message follows a precise lifecycle.

- **Seed**: setting ``system_message`` before the first turn stores it; the first message added puts
  it at the head of ``messages``.
- **Swap**: setting it once messages exist rewrites the system entry in place (inserting one at the
  head if there is none, removing it when set to None). The rest of the history is kept, so the next
  turn answers under the new persona.
- **Reset**: ``reset()`` clears the messages and keeps the system message; ``reset(system_message=None)``
  clears it too; ``reset(system_message="...")`` replaces it. "Keep" is the ``KEEP`` sentinel, not a
  string, so no real prompt can collide with it.

``messages`` is the source of truth: what it holds is what the model is given.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable

from chatgate.history import Message, SystemMessage
from chatgate.ids import new_id

__all__ = ["KEEP", "Conversation", "Keep"]


class Keep(enum.Enum):
    """The type of ``KEEP``."""

    KEEP = "keep"


KEEP = Keep.KEEP
"""Pass to ``Conversation.reset`` (its default) to keep the current system message."""


class Conversation:
    """Messages plus the system message that heads them. See the module docstring."""

    def __init__(self, system_message: str | None = None, messages: Iterable[Message] = ()) -> None:
        self._system_message = system_message
        self._messages: list[Message] = []
        self.add(*messages)

    @property
    def messages(self) -> tuple[Message, ...]:
        """The whole history, system entry included once the first turn has begun."""
        return tuple(self._messages)

    @property
    def system_message(self) -> str | None:
        """The conversation's system message."""
        return self._system_message

    @system_message.setter
    def system_message(self, value: str | None) -> None:
        self._system_message = value
        if self._messages:
            self._swap(value)

    def add(self, *messages: Message) -> None:
        """Append messages; the first ones added put the seeded system message at the head."""
        self._messages[:] = self.with_turn(*messages)

    def with_turn(self, *messages: Message) -> tuple[Message, ...]:
        """The history ``add(*messages)`` would make, without changing the conversation."""
        if not messages:
            return self.messages
        seed = self._system_message if not self._messages else None
        if seed is not None and not isinstance(messages[0], SystemMessage):
            return (SystemMessage(seed, id=new_id("sys")), *messages)
        return (*self._messages, *messages)

    def reset(self, system_message: str | Keep | None = KEEP) -> None:
        """Clear the messages; keep, clear (None) or replace the system message."""
        self._messages.clear()
        if system_message is not KEEP:
            self._system_message = system_message

    def _swap(self, value: str | None) -> None:
        index = next((i for i, m in enumerate(self._messages) if isinstance(m, SystemMessage)), None)
        if index is None:
            if value is not None:
                self._messages.insert(0, SystemMessage(value, id=new_id("sys")))
        elif value is None:
            del self._messages[index]
        else:
            current = self._messages[index]
            assert isinstance(current, SystemMessage)
            self._messages[index] = SystemMessage(value, id=current.id, role=current.role)

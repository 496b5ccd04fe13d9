"""A call beside the conversation: one model call with a fixed instruction, its text and usage collected.

The context summary (app/context/summary_writer.py) and a thread's title (app/threads/titles.py) are
written this way: the operator's system prompt never reaches these calls, and their answers never
reach the client as a stream.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from chatgate.events import TextDelta, Usage
from chatgate.history import Message
from chatgate.providers.base import ModelRequest, Provider

__all__ = ["SideModel", "side_answer"]

_ANSWER_KEYS = ("max_tokens", "max_completion_tokens", "num_predict")


@dataclass(frozen=True, slots=True)
class SideModel:
    """The model a side call goes to: its provider, the name it is known by there, and its settings.

    ``label`` is the ``provider:model`` string recorded with what it writes; ``settings`` the
    ``model_settings`` its calls take, before their answer limit is set.
    """

    provider: Provider
    model: str
    label: str
    settings: Mapping[str, Any] = field(default_factory=dict)


async def side_answer(model: SideModel, messages: Sequence[Message], max_tokens: int) -> tuple[str, Usage | None]:
    """The call's whole answer text (stripped) and its usage, if the upstream reported one.

    Raises ``ProviderError`` when the call fails.
    """
    settings = {key: value for key, value in model.settings.items() if key not in _ANSWER_KEYS}
    answer_key = next((key for key in _ANSWER_KEYS if key in model.settings), "max_tokens")
    settings[answer_key] = max_tokens
    request = ModelRequest(model.model, tuple(messages), settings=settings)
    parts: list[str] = []
    usage: Usage | None = None
    stream = model.provider.stream(request)
    try:
        async for event in stream:
            if type(event) is TextDelta:
                parts.append(event.delta)
            elif type(event) is Usage:
                usage = event
    finally:
        aclose = getattr(stream, "aclose", None)
        if aclose is not None:
            await aclose()
    return "".join(parts).strip(), usage

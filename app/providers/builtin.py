"""The built-in development model, ``builtin:echo``.

It is deterministic and needs no API key: it answers by stating exactly what it received, the full
text of its system prompt (or that it got none) and the last user message, streamed word by word.
That makes the system-prompt policy visible from curl or a browser. It is a development aid, not a
language model.

It can also exercise tools: a last user message ``/call NAME {"json": "arguments"}`` makes it call the
offered tool NAME with those arguments, and when the history ends with tool results it answers by
stating them (``Tool results: ...``).

Settings (an agent's ``model_settings``, checked when the config loads like every kind's, see
``app/config/model_settings.py``):

- ``delay``: seconds to wait before each word (default 0).
- ``reasoning``: when true, a short reasoning span comes before the answer.
- ``fail_after``: fail the call with an upstream-style error after this many words, to see how
  each protocol ends a broken stream.
- ``history``: when true, a third line lists every user message it received (``User messages: a | b``),
  to see that a stored thread reached the model whole.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import AsyncIterator

from chatgate.errors import ProviderError
from chatgate.events import (
    ModelFinished,
    ReasoningDelta,
    ReasoningEnd,
    ReasoningStart,
    RunEvent,
    TextDelta,
    TextEnd,
    TextStart,
    ToolCallDelta,
    ToolCallEnd,
    ToolCallStart,
    Usage,
)
from chatgate.history import ToolMessage, UserMessage, system_text
from chatgate.ids import new_id
from chatgate.providers.base import ModelRequest

__all__ = ["EchoModel", "echo_reply"]

_WORDS = re.compile(r"\S+\s*|\s+")
_CALL = re.compile(r"^/call\s+([A-Za-z0-9_.-]+)\s*(.*)$", re.DOTALL)


def echo_reply(request: ModelRequest) -> str:
    """The text ``builtin:echo`` answers ``request`` with."""
    results = _trailing_tool_results(request)
    if results:
        return "Tool results: " + "; ".join(
            f"{m.tool_call_id} {'failed' if m.is_error else 'returned'}: {m.content}" for m in results
        )
    prompt = system_text(request.messages)
    last_user = next(
        (message.text for message in reversed(request.messages) if isinstance(message, UserMessage)),
        None,
    )
    prompt_line = f"System prompt: {prompt}" if prompt is not None else "System prompt: (none)"
    user_line = f"Last user message: {last_user}" if last_user is not None else "Last user message: (none)"
    if not request.settings.get("history"):
        return f"{prompt_line}\n{user_line}"
    users = " | ".join(message.text for message in request.messages if isinstance(message, UserMessage))
    return f"{prompt_line}\n{user_line}\nUser messages: {users}"


def _trailing_tool_results(request: ModelRequest) -> list[ToolMessage]:
    results: list[ToolMessage] = []
    for message in reversed(request.messages):
        if not isinstance(message, ToolMessage):
            break
        results.insert(0, message)
    return results


def _requested_call(request: ModelRequest) -> tuple[str, str] | None:
    """``(tool name, arguments)`` when the last message is a user's ``/call NAME {...}``."""
    last = request.messages[-1] if request.messages else None
    if not isinstance(last, UserMessage):
        return None
    match = _CALL.match(last.text.strip())
    if match is None:
        return None
    return match.group(1), match.group(2).strip() or "{}"


class EchoModel:
    """``builtin:echo``: streams back what it received. See the module docstring."""

    name = "builtin"

    async def stream(self, request: ModelRequest) -> AsyncIterator[RunEvent]:
        """Stream the echo reply word by word."""
        if request.model != "echo":
            raise ProviderError(f"builtin has no model {request.model!r}", public_message="Unknown model.")
        settings = request.settings
        delay = float(settings.get("delay", 0))
        fail_after = settings.get("fail_after")
        words = _WORDS.findall(echo_reply(request))

        if settings.get("reasoning"):
            reasoning_id = new_id("rs")
            yield ReasoningStart(reasoning_id)
            for word in _WORDS.findall("I will repeat what I was given."):
                yield ReasoningDelta(reasoning_id, word)
            yield ReasoningEnd(reasoning_id)

        call = _requested_call(request)
        if call is not None and any(tool.name == call[0] for tool in request.tools):
            name, arguments = call
            call_id = new_id("call")
            yield ToolCallStart(call_id, name)
            yield ToolCallDelta(call_id, arguments)
            yield ToolCallEnd(call_id, arguments)
            yield ModelFinished("tool_calls")
            return

        text_id = new_id("msg")
        yield TextStart(text_id)
        # The words it will send are known now: no per-word check of fail_after.
        sent = words if fail_after is None else words[: int(fail_after)]
        for word in sent:
            if delay:
                await asyncio.sleep(delay)
            yield TextDelta(text_id, word)
        if len(sent) < len(words):
            raise ProviderError(f"builtin:echo failed on purpose after {len(sent)} words (fail_after)")
        yield TextEnd(text_id)
        yield Usage(input_tokens=sum(1 for _ in request.messages), output_tokens=len(words))
        yield ModelFinished("stop", response_model="echo")

    async def aclose(self) -> None:
        """Nothing to release."""

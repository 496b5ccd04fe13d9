"""Ollama's native chat API (``POST {base_url}/api/chat``), streamed as newline-delimited JSON.

Each line is ``{"message": {"role", "content", "thinking"?, "tool_calls"?}, "done": false}``; tool
calls arrive whole, with their arguments as an object; the last line has ``"done": true``, its
``done_reason`` and the token counts ``prompt_eval_count`` and ``eval_count``. A failure after the
stream started is a line ``{"error": "..."}`` (the HTTP status is already 200).

Settings map to the request's ``options`` (``max_tokens`` is ``num_predict``), except ``think``,
``keep_alive`` and ``truncate``, which are top-level fields. Images go as base64 in the message's ``images``
(a user's files on the user message, the images a tool returned on its ``tool`` message).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from typing import Any

import httpx

from chatgate.config import OLLAMA_DEFAULT_HOST, ProviderConfig
from chatgate.data_urls import inline_base64
from chatgate.errors import ProviderError
from chatgate.events import (
    FinishReason,
    ModelFinished,
    ReasoningDelta,
    RunEvent,
    TextDelta,
    ToolCallDelta,
    ToolCallEnd,
    ToolCallStart,
    Usage,
)
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
from chatgate.ids import new_id
from chatgate.providers.base import ModelRequest
from chatgate.providers.bodies import malformed, ndjson_objects
from chatgate.providers.http import HTTPProvider, Upstream
from chatgate.providers.parts import arguments_object, unsupported_file
from chatgate.providers.refusals import context_full, is_length_refusal
from chatgate.providers.spans import DeltaSpans
from chatgate.strict_json import dump_json

__all__ = ["OllamaProvider", "encode_messages"]

DONE_REASONS: Mapping[str, FinishReason] = {"stop": "stop", "length": "length"}
TOP_LEVEL_SETTINGS = frozenset({"think", "keep_alive", "truncate"})


class OllamaProvider(HTTPProvider):
    """An Ollama server. See the module docstring."""

    def __init__(self, name: str, config: ProviderConfig, client: httpx.AsyncClient) -> None:
        self.name = name
        base_url = (config.base_url or OLLAMA_DEFAULT_HOST).rstrip("/")
        headers = {"accept": "application/x-ndjson"}
        if config.api_key:  # an Ollama behind an authenticating proxy
            headers["authorization"] = f"Bearer {config.api_key}"
        self.upstream = Upstream.from_config(client, name, config, url=f"{base_url}/api/chat", headers=headers)

    def request_body(self, request: ModelRequest) -> dict[str, Any]:
        """The JSON body sent upstream for ``request``."""
        body: dict[str, Any] = {
            "model": request.model,
            "messages": encode_messages(request.messages, self.name),
            "stream": True,
        }
        if request.tools:
            body["tools"] = [
                {
                    "type": "function",
                    "function": {
                        "name": tool.name,
                        "description": tool.description,
                        "parameters": dict(tool.parameters),
                    },
                }
                for tool in request.tools
            ]
        options: dict[str, Any] = {}
        extra: Mapping[str, Any] = {}
        for key, value in request.settings.items():
            if key == "extra_body":
                extra = value
            elif key in TOP_LEVEL_SETTINGS:
                body[key] = value
            else:
                options["num_predict" if key == "max_tokens" else key] = value
        if options:
            body["options"] = options
        body.update(extra)
        return body

    async def decode(self, chunks: AsyncIterator[bytes]) -> AsyncIterator[RunEvent]:
        """NDJSON chat lines as run events."""
        spans = DeltaSpans()
        called = False
        async for line in ndjson_objects(chunks, self.name):
            if not isinstance(line, dict):
                raise malformed(self.name, f"a line that is not an object: {line!r}")
            message = line.get("message")
            if message:
                thinking = message.get("thinking")
                if thinking:
                    if not spans.reasoning_id:
                        for opened in spans.open_reasoning():
                            yield opened
                    yield ReasoningDelta(spans.reasoning_id, thinking)
                content = message.get("content")
                if content:
                    if not spans.text_id:
                        for opened in spans.open_text():
                            yield opened
                    yield TextDelta(spans.text_id, content)
                if message.get("tool_calls"):
                    for closed in spans.close():
                        yield closed
                    for call in message["tool_calls"]:
                        called = True
                        for call_event in self._tool_call(call):
                            yield call_event
            if line.get("done"):
                for closed in spans.close():
                    yield closed
                if "prompt_eval_count" in line or "eval_count" in line:
                    yield Usage(int(line.get("prompt_eval_count") or 0), int(line.get("eval_count") or 0))
                reason = DONE_REASONS.get(line.get("done_reason") or "stop", "other")
                finished = "tool_calls" if called and reason == "stop" else reason
                yield ModelFinished(finished, response_model=str(line.get("model") or ""))
                return
            if "error" in line:
                detail = f"{self.name}: error mid-stream: {str(line['error'])[:500]}"
                raise context_full(detail) if is_length_refusal(detail) else ProviderError(detail)
        raise ProviderError(
            f"{self.name}: the stream ended without a done line",
            public_message="The model stream ended early.",
            kind="interrupted",
        )

    def _tool_call(self, call: Any) -> tuple[RunEvent, ...]:
        function = call.get("function") if isinstance(call, dict) else None
        if not isinstance(function, dict) or not function.get("name"):
            raise malformed(self.name, f"a tool call without a function name: {call!r}")
        call_id = str(call.get("id") or new_id("call"))
        arguments = function.get("arguments") or {}
        text = arguments if isinstance(arguments, str) else dump_json(arguments).decode()
        return ToolCallStart(call_id, function["name"]), ToolCallDelta(call_id, text), ToolCallEnd(call_id, text)


def encode_messages(messages: tuple[Message, ...], provider: str) -> list[dict[str, Any]]:
    """The history as ``/api/chat`` messages; tool results name their tool, as Ollama expects."""
    tool_names: dict[str, str] = {}
    encoded: list[dict[str, Any]] = []
    for message in messages:
        if isinstance(message, SystemMessage):
            encoded.append({"role": "system", "content": message.content})
        elif isinstance(message, UserMessage):
            encoded.append(_user(message, provider))
        elif isinstance(message, AssistantMessage):
            calls = message.tool_calls
            tool_names.update((call.tool_call_id, call.name) for call in calls)
            encoded.append(_assistant(message, calls))
        elif isinstance(message, ToolMessage):  # not ActivityMessage: the frontend's, never the model's
            result: dict[str, Any] = {"role": "tool", "content": message.content}
            if message.tool_call_id in tool_names:
                result["tool_name"] = tool_names[message.tool_call_id]
            if message.images:  # any message may carry base64 images, a tool's result too
                result["images"] = [inline_base64(image.url) for image in message.images]
            encoded.append(result)
    return encoded


def _user(message: UserMessage, provider: str) -> dict[str, Any]:
    encoded: dict[str, Any] = {"role": "user", "content": message.text}
    images = []
    for part in message.parts:
        if isinstance(part, TextPart):
            continue
        data = inline_base64(part.url)
        if data is None or not part.media_type.startswith("image/"):
            raise unsupported_file(provider, part)
        images.append(data)
    if images:
        encoded["images"] = images
    return encoded


def _assistant(message: AssistantMessage, calls: tuple[ToolCallPart, ...]) -> dict[str, Any]:
    encoded: dict[str, Any] = {"role": "assistant", "content": message.text}
    thinking = "".join(part.text for part in message.parts if isinstance(part, ReasoningPart))
    if thinking:
        encoded["thinking"] = thinking
    if calls:
        encoded["tool_calls"] = [
            {"function": {"name": call.name, "arguments": arguments_object(call.arguments)}} for call in calls
        ]
    return encoded

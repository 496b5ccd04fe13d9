"""OpenAI Chat Completions (``POST {base_url}/chat/completions``), and every server that speaks it.

vLLM, llama.cpp server, LM Studio, OpenRouter and Ollama's ``/v1`` take the same request and stream
the same chunks: ``choices[0].delta`` carries ``content``, ``reasoning_content`` or ``reasoning``, and
``tool_calls`` fragments (``id`` and ``name`` once, then ``arguments`` pieces keyed by ``index``); a
last chunk with ``choices: []`` carries ``usage``; ``data: [DONE]`` ends the stream.

History: system messages stay ``system`` messages where the policy put them; assistant reasoning is
not sent back (these APIs do not take it); tool results are ``tool`` messages. A ``tool`` message
holds text only, so images a tool returned follow the step's tool messages in one ``user`` message of
``image_url`` parts, each introduced by the call it came from.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from typing import Any

import httpx

from chatgate.config import OPENAI_DEFAULT_BASE_URL, ProviderConfig
from chatgate.data_urls import data_url_bytes, inline_base64
from chatgate.errors import ProviderError
from chatgate.events import (
    FinishReason,
    ModelFinished,
    ReasoningDelta,
    RunEvent,
    SourceCited,
    TextDelta,
    ToolCallDelta,
    ToolCallEnd,
    ToolCallStart,
    Usage,
)
from chatgate.history import (
    AssistantMessage,
    FilePart,
    Message,
    SystemMessage,
    TextPart,
    ToolCallPart,
    ToolMessage,
    UserMessage,
    complete_arguments,
)
from chatgate.ids import new_id
from chatgate.providers.base import ModelRequest
from chatgate.providers.bodies import malformed, parse_json, sse_messages
from chatgate.providers.http import HTTPProvider, Upstream
from chatgate.providers.parts import cite, unsupported_file
from chatgate.providers.refusals import context_full, is_length_refusal
from chatgate.providers.spans import DeltaSpans
from chatgate.run_input import ToolDefinition
from chatgate.strict_json import dump_json

__all__ = ["OpenAIProvider", "encode_messages"]

FINISH_REASONS: Mapping[str, FinishReason] = {
    "stop": "stop",
    "length": "length",
    "tool_calls": "tool_calls",
    "function_call": "tool_calls",
    "content_filter": "content_filter",
}


class OpenAIProvider(HTTPProvider):
    """A Chat Completions endpoint. See the module docstring."""

    def __init__(self, name: str, config: ProviderConfig, client: httpx.AsyncClient) -> None:
        self.name = name
        base_url = (config.base_url or OPENAI_DEFAULT_BASE_URL).rstrip("/")
        headers = {"accept": "text/event-stream"}
        if config.api_key:
            headers["authorization"] = f"Bearer {config.api_key}"
        self.upstream = Upstream.from_config(client, name, config, url=f"{base_url}/chat/completions", headers=headers)

    def request_body(self, request: ModelRequest) -> dict[str, Any]:
        """The JSON body sent upstream for ``request``."""
        body: dict[str, Any] = {
            "model": request.model,
            "messages": encode_messages(request.messages, self.name),
            "stream": True,
            "stream_options": {"include_usage": True},
        }
        if request.tools:
            body["tools"] = [_tool(tool) for tool in request.tools]
        settings = dict(request.settings)
        extra = settings.pop("extra_body", None) or {}
        body.update(settings)  # the settings keep the API's own names
        body.update(extra)
        return body

    async def decode(self, chunks: AsyncIterator[bytes]) -> AsyncIterator[RunEvent]:
        """Chat Completions chunks as run events."""
        spans = DeltaSpans()
        calls: dict[int, _ToolCall] = {}
        finish: str | None = None
        usage: Usage | None = None
        answered: dict[str, Any] = {}  # the chunk that carried the finish reason: its id and model
        done = False
        cited: set[str] = set()  # each source once per call, however many passages cite it
        async for event, data in sse_messages(chunks):
            if data == b"[DONE]":
                done = True
                break
            chunk = parse_json(data, self.name)
            if not isinstance(chunk, dict):
                raise malformed(self.name, f"a chunk that is not an object: {data[:200]!r}")
            if "error" in chunk or event == "error":
                detail = f"{self.name}: error mid-stream: {data[:500]!r}"
                raise context_full(detail) if is_length_refusal(detail) else ProviderError(detail)
            choices = chunk.get("choices")
            if choices:
                choice = choices[0]
                delta = choice.get("delta")
                if delta:
                    reasoning = delta.get("reasoning_content") or delta.get("reasoning")
                    if reasoning and isinstance(reasoning, str):
                        if not spans.reasoning_id:
                            for opened in spans.open_reasoning():
                                yield opened
                        yield ReasoningDelta(spans.reasoning_id, reasoning)
                    content = delta.get("content")
                    if content:
                        if not spans.text_id:
                            for opened in spans.open_text():
                                yield opened
                        yield TextDelta(spans.text_id, content)
                    annotations = delta.get("annotations")
                    if annotations and isinstance(annotations, list):
                        for source in _sources(annotations, cited):
                            yield source
                    fragments = delta.get("tool_calls")
                    if fragments:
                        for closed in spans.close():
                            yield closed
                        for fragment in fragments:
                            for call_event in self._tool_fragment(calls, fragment):
                                yield call_event
                if choice.get("finish_reason"):
                    finish, answered = choice["finish_reason"], chunk
            if chunk.get("usage"):
                usage = _usage(chunk["usage"]) or usage
        if not done and finish is None:
            raise ProviderError(
                f"{self.name}: the stream ended without [DONE] or a finish_reason",
                public_message="The model stream ended early.",
                kind="interrupted",
            )
        for closed in spans.close():
            yield closed
        for call in calls.values():
            if not call.started:
                raise malformed(self.name, f"tool call {call.id!r} never got a name")
            yield ToolCallEnd(call.id, "".join(call.arguments) or "{}")
        if usage is not None:
            yield usage
        reason = FINISH_REASONS.get(finish or "stop", "other")
        yield ModelFinished(
            "tool_calls" if calls and reason == "stop" else reason,
            str(answered.get("id") or ""),
            str(answered.get("model") or ""),
        )

    def _tool_fragment(self, calls: dict[int, _ToolCall], fragment: Any) -> list[RunEvent]:
        """Events for one ``tool_calls`` fragment; a call starts once its name is known."""
        if not isinstance(fragment, dict):
            raise malformed(self.name, f"a tool call fragment that is not an object: {fragment!r}")
        index = fragment.get("index", len(calls))
        call = calls.get(index)
        if call is None:
            call = calls[index] = _ToolCall(fragment.get("id") or new_id("call"))
        function = fragment.get("function") or {}
        arguments = function.get("arguments")
        if arguments is not None and not isinstance(arguments, str):
            arguments = dump_json(arguments).decode()  # a few servers send the object itself
        events: list[RunEvent] = []
        if not call.started and function.get("name"):
            call.started = True
            events.append(ToolCallStart(call.id, function["name"]))
            if call.arguments:
                events.append(ToolCallDelta(call.id, "".join(call.arguments)))
        if arguments:
            call.arguments.append(arguments)
            if call.started:
                events.append(ToolCallDelta(call.id, arguments))
        return events


class _ToolCall:
    """A tool call being assembled from its fragments."""

    __slots__ = ("arguments", "id", "started")

    def __init__(self, call_id: str) -> None:
        self.id = call_id
        self.arguments: list[str] = []
        self.started = False


def _usage(usage: Any) -> Usage | None:
    """The chunk's ``usage`` (None when it is not an object); the details only when the server sent them."""
    if not isinstance(usage, dict):
        return None
    completion = usage.get("completion_tokens_details")
    prompt = usage.get("prompt_tokens_details")
    reasoning = completion.get("reasoning_tokens") if isinstance(completion, dict) else None
    cached = prompt.get("cached_tokens") if isinstance(prompt, dict) else None
    return Usage(
        int(usage.get("prompt_tokens") or 0),
        int(usage.get("completion_tokens") or 0),
        int(reasoning) if isinstance(reasoning, int) else None,
        int(cached) if isinstance(cached, int) else None,
    )


def _tool(tool: ToolDefinition) -> dict[str, Any]:
    function: dict[str, Any] = {"name": tool.name, "parameters": dict(tool.parameters)}
    if tool.description:
        function["description"] = tool.description
    return {"type": "function", "function": function}


def encode_messages(messages: tuple[Message, ...], provider: str) -> list[dict[str, Any]]:
    """The history as Chat Completions ``messages``."""
    encoded: list[dict[str, Any]] = []
    images: list[dict[str, Any]] = []  # of the tool messages just encoded: they go after the last one
    for message in messages:
        if images and not isinstance(message, ToolMessage):
            encoded.append({"role": "user", "content": images})
            images = []
        if isinstance(message, SystemMessage):
            encoded.append({"role": "system", "content": message.content})
        elif isinstance(message, UserMessage):
            encoded.append({"role": "user", "content": _user_content(message, provider)})
        elif isinstance(message, AssistantMessage):
            assistant = _assistant(message)
            if assistant is not None:
                encoded.append(assistant)
        elif isinstance(message, ToolMessage):
            encoded.append(_tool_result(message))
            if message.images:
                images.append({"type": "text", "text": f"The images tool call {message.tool_call_id} returned:"})
                images += [{"type": "image_url", "image_url": {"url": image.url}} for image in message.images]
        # ActivityMessage: the frontend's, never the model's (the runner leaves it out already)
    if images:
        encoded.append({"role": "user", "content": images})
    return encoded


def _user_content(message: UserMessage, provider: str) -> str | list[dict[str, Any]]:
    if all(isinstance(part, TextPart) for part in message.parts):
        return message.text
    content: list[dict[str, Any]] = []
    for part in message.parts:
        if isinstance(part, TextPart):
            content.append({"type": "text", "text": part.text})
        else:
            content.append(_file(part, provider))
    return content


_AUDIO_FORMATS = {
    "audio/wav": "wav",
    "audio/x-wav": "wav",
    "audio/wave": "wav",
    "audio/mpeg": "mp3",
    "audio/mp3": "mp3",
}


def _file(part: FilePart, provider: str) -> dict[str, Any]:
    """Images by URL or inline, inline PDFs as files, inline WAV/MP3 as audio, inline text as text."""
    if part.media_type.startswith("image/"):
        return {"type": "image_url", "image_url": {"url": part.url}}
    data = inline_base64(part.url)
    if data is None:
        raise unsupported_file(provider, part)
    if part.media_type == "application/pdf":
        file: dict[str, Any] = {"file_data": part.url}
        if part.filename:
            file["filename"] = part.filename
        return {"type": "file", "file": file}
    audio_format = _AUDIO_FORMATS.get(part.media_type)
    if audio_format is not None:
        return {"type": "input_audio", "input_audio": {"data": data, "format": audio_format}}
    if part.media_type.startswith("text/"):
        try:
            text = data_url_bytes(part.url).decode("utf-8")
        except ValueError:  # UnicodeDecodeError is one
            raise unsupported_file(provider, part) from None
        name = part.filename or "attached file"
        return {"type": "text", "text": f"{name}:\n{text}"}
    raise unsupported_file(provider, part)


def _sources(annotations: list[Any], cited: set[str]) -> list[SourceCited]:
    """The pages a delta's ``url_citation`` annotations name (``{type, url_citation: {url, title}}``)."""
    sources = []
    for annotation in annotations:
        if not isinstance(annotation, dict) or annotation.get("type") != "url_citation":
            continue
        detail = annotation.get("url_citation")
        detail = detail if isinstance(detail, dict) else annotation  # some servers put the fields flat
        url, title = detail.get("url"), detail.get("title")
        if isinstance(url, str) and url:
            source = cite(cited, url=url, title=title if isinstance(title, str) else None)
            if source is not None:
                sources.append(source)
    return sources


def _assistant(message: AssistantMessage) -> dict[str, Any] | None:
    calls = [_tool_call(part) for part in message.parts if isinstance(part, ToolCallPart)]
    text = message.text
    if not calls and not text:
        return None  # reasoning only: nothing this API takes back
    encoded: dict[str, Any] = {"role": "assistant", "content": text or None}
    if calls:
        encoded["tool_calls"] = calls
    return encoded


def _tool_call(part: ToolCallPart) -> dict[str, Any]:
    # A call cut off mid-arguments goes back as {} (its result says so): servers parse the arguments.
    arguments = part.arguments if part.arguments and complete_arguments(part.arguments) else "{}"
    return {"id": part.tool_call_id, "type": "function", "function": {"name": part.name, "arguments": arguments}}


def _tool_result(message: ToolMessage) -> dict[str, Any]:
    return {"role": "tool", "tool_call_id": message.tool_call_id, "content": message.content}

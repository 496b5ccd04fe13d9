"""Anthropic Messages (``POST {base_url}/v1/messages``, ``anthropic-version: 2023-06-01``).

The stream is SSE with named events: ``message_start`` (input usage), then per content block
``content_block_start`` / ``content_block_delta`` / ``content_block_stop`` (text, thinking with its
signature, redacted thinking, tool_use with ``input_json_delta`` pieces), ``message_delta`` (stop
reason, output usage), ``message_stop``; ``ping`` anywhere, ``error`` mid-stream. Unknown events,
blocks and deltas are skipped, as the API's versioning policy asks.

History rules the API enforces, applied here:

- every system message (wherever the policy left it) is lifted into the top-level ``system`` string;
- tool results go back as a user turn of ``tool_result`` blocks (with ``image`` blocks in their content
  for the images a tool returned), and consecutive same-role turns merge;
- a history that starts with the assistant gets a short user turn before it;
- thinking blocks go back unmodified with their signature, kept in ``ReasoningPart.provider_data``
  as ``{"anthropic": {"signature": ...}}`` (``{"anthropic": {"redacted": ...}}`` for redacted
  thinking); reasoning without one (another provider's) is not sent;
- ``max_tokens`` is required: it defaults to 4096, or that much above a thinking budget.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from typing import Any

import httpx

from chatgate.config import ProviderConfig
from chatgate.data_urls import inline_base64
from chatgate.errors import ProviderError, ProviderErrorKind
from chatgate.events import (
    FinishReason,
    ModelFinished,
    ReasoningDelta,
    ReasoningEnd,
    ReasoningStart,
    RunEvent,
    SourceCited,
    TextDelta,
    TextEnd,
    TextStart,
    ToolCallDelta,
    ToolCallEnd,
    ToolCallStart,
    Usage,
)
from chatgate.history import (
    HISTORY_START,
    AssistantMessage,
    AssistantPart,
    FilePart,
    Message,
    SourcePart,
    SystemMessage,
    TextPart,
    ToolCallPart,
    ToolMessage,
    UserMessage,
)
from chatgate.ids import new_id
from chatgate.providers.base import ModelRequest
from chatgate.providers.bodies import malformed, parse_json, sse_messages
from chatgate.providers.http import HTTPProvider, Upstream
from chatgate.providers.parts import arguments_object, cite, unsupported_file
from chatgate.providers.refusals import context_full, is_length_refusal

__all__ = ["AnthropicProvider", "encode_messages"]

DEFAULT_BASE_URL = "https://api.anthropic.com"
API_VERSION = "2023-06-01"
DEFAULT_MAX_TOKENS = 4096

STOP_REASONS: Mapping[str, FinishReason] = {
    "end_turn": "stop",
    "stop_sequence": "stop",
    "max_tokens": "length",
    "tool_use": "tool_calls",
    "refusal": "content_filter",
}
ERROR_MESSAGES: Mapping[str, tuple[str, ProviderErrorKind]] = {
    "overloaded_error": ("The model provider is overloaded; try again later.", "overloaded"),
    "rate_limit_error": ("The model provider is rate limiting requests; try again later.", "rate_limited"),
}


class AnthropicProvider(HTTPProvider):
    """The Anthropic Messages API. See the module docstring."""

    def __init__(self, name: str, config: ProviderConfig, client: httpx.AsyncClient) -> None:
        self.name = name
        base_url = (config.base_url or DEFAULT_BASE_URL).rstrip("/")
        headers = {"accept": "text/event-stream", "anthropic-version": API_VERSION}
        if config.api_key:
            headers["x-api-key"] = config.api_key
        self.upstream = Upstream.from_config(client, name, config, url=f"{base_url}/v1/messages", headers=headers)

    def request_body(self, request: ModelRequest) -> dict[str, Any]:
        """The JSON body sent upstream for ``request``."""
        system, messages = encode_messages(request.messages, self.name)
        settings = dict(request.settings)
        extra = settings.pop("extra_body", None) or {}
        thinking = settings.pop("thinking", None)
        if isinstance(thinking, int):
            thinking = {"type": "enabled", "budget_tokens": thinking}
        budget = thinking.get("budget_tokens", 0) if isinstance(thinking, dict) else 0
        body: dict[str, Any] = {
            "model": request.model,
            "max_tokens": settings.pop("max_tokens", None) or DEFAULT_MAX_TOKENS + budget,
        }
        if system:
            body["system"] = system
        body["messages"] = messages
        if request.tools:
            body["tools"] = [
                {"name": tool.name, "description": tool.description, "input_schema": dict(tool.parameters)}
                if tool.description
                else {"name": tool.name, "input_schema": dict(tool.parameters)}
                for tool in request.tools
            ]
        if thinking is not None:
            body["thinking"] = thinking
        stop = settings.pop("stop", None)
        if stop is not None:
            body["stop_sequences"] = [stop] if isinstance(stop, str) else stop
        body.update(settings)  # temperature, top_p, top_k: the API's own names
        body["stream"] = True
        body.update(extra)
        return body

    async def decode(self, chunks: AsyncIterator[bytes]) -> AsyncIterator[RunEvent]:
        """Messages stream events as run events."""
        blocks: dict[int, _Block] = {}
        input_tokens = output_tokens = 0
        cached: int | None = None
        cache_write: int | None = None
        reported = False
        stop_reason: str | None = None
        response_id = response_model = ""
        finished = False
        cited: set[str] = set()  # each source once per call, however many passages cite it
        try:
            async for _event, data in sse_messages(chunks):
                payload = parse_json(data, self.name)
                if not isinstance(payload, dict):
                    raise malformed(self.name, f"an event that is not an object: {data[:200]!r}")
                kind = payload.get("type")
                if kind == "content_block_delta":
                    block = blocks.get(payload.get("index", -1))
                    delta = payload.get("delta")
                    if block is None or not isinstance(delta, dict):
                        continue  # a delta of a block type we skip
                    delta_type = delta.get("type")
                    if delta_type == "text_delta":
                        if delta.get("text"):
                            yield TextDelta(block.id, delta["text"])
                    elif delta_type == "thinking_delta":
                        if delta.get("thinking"):
                            yield ReasoningDelta(block.id, delta["thinking"])
                    elif delta_type == "input_json_delta":
                        if delta.get("partial_json"):
                            block.parts.append(delta["partial_json"])
                            yield ToolCallDelta(block.id, delta["partial_json"])
                    elif delta_type == "signature_delta":
                        block.parts.append(delta.get("signature") or "")
                    elif delta_type == "citations_delta":
                        source = _source(delta.get("citation"), cited)
                        if source is not None:
                            yield source
                elif kind == "content_block_start":
                    index, content_block = payload.get("index"), payload.get("content_block")
                    if isinstance(index, int) and isinstance(content_block, dict):
                        for started in _start_block(blocks, index, content_block):
                            yield started
                        for citation in content_block.get("citations") or ():
                            source = _source(citation, cited)
                            if source is not None:
                                yield source
                elif kind == "content_block_stop":
                    block = blocks.pop(payload.get("index", -1), None)
                    if block is not None:
                        yield block.end()
                elif kind == "message_start":
                    message = payload.get("message") or {}
                    response_id, response_model = str(message.get("id") or ""), str(message.get("model") or "")
                    usage = message.get("usage") or {}
                    reported = reported or bool(usage)
                    input_tokens = _input_tokens(usage)
                    output_tokens = int(usage.get("output_tokens") or 0)
                    cached = _cached(usage, cached)
                    cache_write = _cached(usage, cache_write, "cache_creation_input_tokens")
                elif kind == "message_delta":
                    stop_reason = (payload.get("delta") or {}).get("stop_reason") or stop_reason
                    usage = payload.get("usage") or {}
                    reported = reported or bool(usage)
                    input_tokens = _input_tokens(usage) or input_tokens
                    output_tokens = int(usage.get("output_tokens") or output_tokens)
                    cached = _cached(usage, cached)
                    cache_write = _cached(usage, cache_write, "cache_creation_input_tokens")
                elif kind == "message_stop":
                    finished = True
                    break
                elif kind == "error":
                    error = payload.get("error") or {}
                    detail = f"{self.name}: error event: {data[:500]!r}"
                    if is_length_refusal(detail):
                        raise context_full(detail)
                    public, kind = ERROR_MESSAGES.get(error.get("type", ""), ("The model failed.", "other"))
                    raise ProviderError(detail, public_message=public, kind=kind)
                # ping and event types newer than this code: nothing to do
            if not finished and stop_reason is None:
                raise ProviderError(
                    f"{self.name}: the stream ended without message_stop",
                    public_message="The model stream ended early.",
                    kind="interrupted",
                )
        except Exception:  # the stream broke (a transport error, mapped by the caller) or the upstream failed
            if reported:  # it bills what it produced before the failure: count what it reported
                yield Usage(
                    input_tokens, output_tokens, cached_input_tokens=cached, cache_write_input_tokens=cache_write
                )
            raise
        for block in blocks.values():
            yield block.end()
        if reported:
            yield Usage(input_tokens, output_tokens, cached_input_tokens=cached, cache_write_input_tokens=cache_write)
        yield ModelFinished(STOP_REASONS.get(stop_reason or "end_turn", "other"), response_id, response_model)


class _Block:
    """One open content block: its kind, the id its events carry, and what its end needs."""

    __slots__ = ("id", "kind", "parts")

    def __init__(self, kind: str, block_id: str) -> None:
        self.kind = kind
        self.id = block_id
        self.parts: list[str] = []  # tool input JSON pieces, or thinking signature pieces

    def end(self) -> RunEvent:
        if self.kind == "text":
            return TextEnd(self.id)
        if self.kind == "tool_use":
            return ToolCallEnd(self.id, "".join(self.parts) or "{}")
        if self.kind == "redacted_thinking":
            return ReasoningEnd(self.id, {"anthropic": {"redacted": self.parts[0]}})
        signature = "".join(self.parts)
        return ReasoningEnd(self.id, {"anthropic": {"signature": signature}} if signature else None)


def _start_block(blocks: dict[int, _Block], index: int, content: dict[str, Any]) -> list[RunEvent]:
    kind = content.get("type")
    if kind == "text":
        block = blocks[index] = _Block("text", new_id("msg"))
        events: list[RunEvent] = [TextStart(block.id)]
        if content.get("text"):
            events.append(TextDelta(block.id, content["text"]))
        return events
    if kind == "thinking":
        block = blocks[index] = _Block("thinking", new_id("rs"))
        events = [ReasoningStart(block.id)]
        if content.get("thinking"):
            events.append(ReasoningDelta(block.id, content["thinking"]))
        if content.get("signature"):
            block.parts.append(content["signature"])
        return events
    if kind == "redacted_thinking":
        block = blocks[index] = _Block("redacted_thinking", new_id("rs"))
        block.parts.append(str(content.get("data", "")))
        return [ReasoningStart(block.id)]
    if kind == "tool_use":
        block = blocks[index] = _Block("tool_use", str(content.get("id") or new_id("toolu")))
        return [ToolCallStart(block.id, str(content.get("name", "")))]
    return []  # server tool blocks and newer types: not ours to relay


_DOCUMENT_TYPES = {"char_location": "text/plain", "page_location": "application/pdf"}


def _source(citation: Any, cited: set[str]) -> SourceCited | None:
    """The source a text block's citation names: a web search result's page, or a document of the request.

    A document is known by its index in the request (``Document 1`` when it has no title); a search
    result by its ``source`` (a page when that is a URL).
    """
    if not isinstance(citation, dict):
        return None
    kind = citation.get("type")
    title = citation.get("title") or citation.get("document_title")
    title = title if isinstance(title, str) else None
    if kind == "web_search_result_location" and isinstance(citation.get("url"), str):
        return cite(cited, url=citation["url"], title=title)
    if kind == "search_result_location" and isinstance(citation.get("source"), str):
        origin = citation["source"]
        if origin.startswith(("https://", "http://")):
            return cite(cited, url=origin, title=title)
        return cite(cited, title=title or origin, key=f"search:{origin}")
    if kind in ("char_location", "page_location", "content_block_location"):
        index = citation.get("document_index")
        number = index + 1 if isinstance(index, int) else 1
        media_type = _DOCUMENT_TYPES.get(kind, "text/plain")
        return cite(cited, title=title or f"Document {number}", media_type=media_type, key=f"document:{index}")
    return None  # a citation type newer than this code


def _cached(usage: Mapping[str, Any], before: int | None, key: str = "cache_read_input_tokens") -> int | None:
    """Input tokens read from (``key``: or written to) the prompt cache, when the usage says, else ``before``."""
    value = usage.get(key)
    return int(value) if isinstance(value, int) else before


def _input_tokens(usage: Mapping[str, Any]) -> int:
    """Every input token, cached or not."""
    keys = ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens")
    return sum(int(usage.get(key) or 0) for key in keys)


def encode_messages(messages: tuple[Message, ...], provider: str) -> tuple[str | None, list[dict[str, Any]]]:
    """The history as ``(system, messages)`` for the Messages API. See the module docstring."""
    system: list[str] = []
    turns: list[dict[str, Any]] = []

    def add(role: str, blocks: list[dict[str, Any]]) -> None:
        if not blocks:
            return
        if turns and turns[-1]["role"] == role:
            turns[-1]["content"].extend(blocks)
        else:
            turns.append({"role": role, "content": blocks})

    for message in messages:
        if isinstance(message, SystemMessage):
            if message.content:
                system.append(message.content)
        elif isinstance(message, UserMessage):
            add("user", [_user_block(part, provider) for part in message.parts if not _empty(part)])
        elif isinstance(message, AssistantMessage):
            add("assistant", [block for part in message.parts if (block := _assistant_block(part)) is not None])
        elif isinstance(message, ToolMessage):
            add("user", [_tool_result(message)])
        # ActivityMessage: the frontend's, never the model's (the runner leaves it out already)
    if turns and turns[0]["role"] == "assistant":
        turns.insert(0, {"role": "user", "content": [{"type": "text", "text": HISTORY_START}]})
    if turns and turns[-1]["role"] == "assistant":
        _strip_trailing_whitespace(turns[-1]["content"])
        if not turns[-1]["content"]:
            turns.pop()
    return ("\n\n".join(system) or None), turns


def _empty(part: TextPart | FilePart) -> bool:
    return isinstance(part, TextPart) and not part.text.strip()


def _user_block(part: TextPart | FilePart, provider: str) -> dict[str, Any]:
    if isinstance(part, TextPart):
        return {"type": "text", "text": part.text}
    data = inline_base64(part.url)
    if part.media_type.startswith("image/"):
        kind = "image"
    elif part.media_type == "application/pdf":
        kind = "document"
    else:
        raise unsupported_file(provider, part)
    if data is None:
        return {"type": kind, "source": {"type": "url", "url": part.url}}
    return {"type": kind, "source": {"type": "base64", "media_type": part.media_type, "data": data}}


def _assistant_block(part: AssistantPart) -> dict[str, Any] | None:
    if isinstance(part, SourcePart):
        return None  # a source the answer cited: for the reader, not the model
    if isinstance(part, TextPart):
        return {"type": "text", "text": part.text} if part.text else None
    if isinstance(part, ToolCallPart):
        return {
            "type": "tool_use",
            "id": part.tool_call_id,
            "name": part.name,
            "input": arguments_object(part.arguments),
        }
    saved = (part.provider_data or {}).get("anthropic")
    if not isinstance(saved, dict):
        return None  # reasoning the API did not sign cannot go back
    if "redacted" in saved:
        return {"type": "redacted_thinking", "data": saved["redacted"]}
    if "signature" in saved:
        return {"type": "thinking", "thinking": part.text, "signature": saved["signature"]}
    return None


def _tool_result(message: ToolMessage) -> dict[str, Any]:
    content: str | list[dict[str, Any]] = message.content
    if message.images:  # a tool_result's content may hold image blocks beside its text
        content = [{"type": "text", "text": message.content}]
        for image in message.images:
            source = {"type": "base64", "media_type": image.media_type, "data": inline_base64(image.url)}
            content.append({"type": "image", "source": source})
    block: dict[str, Any] = {"type": "tool_result", "tool_use_id": message.tool_call_id, "content": content}
    if message.is_error:
        block["is_error"] = True
    return block


def _strip_trailing_whitespace(blocks: list[dict[str, Any]]) -> None:
    """The API refuses a final assistant turn (a prefill) whose text ends in whitespace."""
    last = blocks[-1]
    if last["type"] == "text":
        last["text"] = last["text"].rstrip()
        if not last["text"]:
            blocks.pop()

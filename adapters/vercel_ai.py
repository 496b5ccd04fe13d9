"""The Vercel AI SDK UI message stream: what ``useChat`` sends and reads (``ai`` 5.x, 6.x and 7.x).

Decode: a ``DefaultChatTransport`` body becomes a ``RunInput``. The chat ``id`` is the thread; extra
body fields become ``variables``; ``system`` messages become ``SystemMessage`` (the policy decides
their fate). An assistant message is split into one ``AssistantMessage`` per model step (at
``step-start``, or where text follows a tool call), each followed by a ``ToolMessage`` per answered
tool call, so the model reads calls and results in the order they happened. ``source-url``,
``source-document``, ``step-start``, ``data-*`` and unknown part types are UI-only and never reach
the model; neither do files in assistant messages, and a user message left with no text or file is
dropped. Later steps of one assistant message get ids ``ID:1``, ``ID:2``, ... A body with only the
newest ``message`` decodes to that one message with ``newest_only`` set: only an agent with
``conversations = "server"`` accepts it (the server holds the rest). ``regenerate-message`` sets
``regenerate``; a stateless agent answers the history as sent.

Encode: ``start``, then one chunk per run event, then ``finish`` and ``[DONE]``. Deltas are written
from byte prefixes built when their part opens, so a token costs one ``to_json`` of its text.

- Failures: open text and reasoning are ended, open tool calls get ``tool-output-error``, then
  ``error``, ``finish-step`` (if a step is open) and ``finish`` with reason ``error``. The error text
  is ``RunFailed.message``, which the core guarantees is the public message (the runner logs the
  detail); a failure only the encoder sees (the events raising, or ending without a terminal event)
  is logged and shown as "An error occurred.".
- Provider data (what a provider needs echoed back next turn) travels as
  ``providerMetadata: {"chatgate": {...}}`` on ``reasoning-end`` and ``tool-input-available``; decode
  unwraps it from ``providerMetadata`` / ``callProviderMetadata`` (other metadata is kept whole).
- Steps: a model step's tool outputs and approval requests come inside it, before its
  ``finish-step``, as the AI SDK's own server sends them (``finish-step`` is written when the next
  step starts or the stream ends). Outcomes settled before the first model step (a resumed approval)
  come before any ``start-step``, as there too.
- Versions (the agent's ``vercel_ai_version``): v6 and v7 get ``finish.finishReason``,
  ``tool-approval-request`` and ``tool-output-denied``. v5 gets neither: ai 5.0.0 to 5.0.91 reject
  unknown fields and a ``finishReason`` on ``finish``, and no 5.x knows approvals, so an approval
  request or a denial reaches a v5 client as ``tool-output-error`` saying so. Nothing v7-only is sent.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncGenerator, AsyncIterator, Mapping, Sequence
from typing import Any

from pydantic_core import from_json, to_json

from chatgate.adapters.base import decode_body, sse_frame
from chatgate.adapters.vercel_ai_messages import ui_messages
from chatgate.adapters.vercel_ai_wire import (
    NEWEST,
    REQUEST,
    FileUIPart,
    ReasoningUIPart,
    StepStartUIPart,
    TextUIPart,
    ToolUIPart,
    UIMessage,
    UIPart,
)
from chatgate.config import AgentConfig, VercelAIVersion
from chatgate.errors import RequestError
from chatgate.events import (
    FinishReason,
    ReasoningDelta,
    ReasoningEnd,
    ReasoningStart,
    RunEvent,
    RunFailed,
    RunFinished,
    StepFinished,
    StepStarted,
    TextDelta,
    TextEnd,
    TextStart,
    ToolApprovalRequested,
    ToolCallDelta,
    ToolCallEnd,
    ToolCallStart,
    ToolDenied,
    ToolResult,
    Usage,
)
from chatgate.history import (
    AssistantMessage,
    AssistantPart,
    FilePart,
    Message,
    ReasoningPart,
    SystemMessage,
    TextPart,
    ToolCallPart,
    ToolMessage,
    UserMessage,
    UserPart,
)
from chatgate.ids import new_id
from chatgate.run_input import ApprovalResponse, RunInput
from chatgate.strict_json import dump_json
from chatgate.usage import RunUsage

__all__ = ["HEADERS", "MASKED_ERROR", "VercelAIProtocol", "protocol"]

logger = logging.getLogger("chatgate.adapters.vercel_ai")

HEADERS: Mapping[str, str] = {
    "cache-control": "no-cache",
    "x-vercel-ai-ui-message-stream": "v1",
    "x-accel-buffering": "no",
}
"""The response headers useChat expects (content-type is set by the SSE response)."""

MASKED_ERROR = "An error occurred."
"""The error text for failures whose message is not known to be safe for a client."""

METADATA_KEY = "chatgate"
DENIED = "The user denied this tool call."
CUT_OFF = "The tool call was cut off."
INVALID_ARGUMENTS = "The model's tool arguments were cut off: they are not a complete JSON object."
NO_APPROVALS = "This tool call needs a human's approval, which this client (AI SDK 5) cannot give."

_DONE = b"data: [DONE]\n\n"
_FRAME_END = b"}\n\n"
_FINISH_REASONS: Mapping[FinishReason, str] = {
    "stop": "stop",
    "length": "length",
    "tool_calls": "tool-calls",
    "content_filter": "content-filter",
    "error": "error",
    "other": "other",
}


class VercelAIProtocol:
    """The useChat protocol: ``POST /api/chat`` and ``/agents/{agent}/chat``. See the module docstring."""

    name = "vercel-ai"
    route = "chat"
    default_path = "/api/chat"

    def request_schema(self, ref_template: str) -> dict[str, Any]:
        """The JSON schema of a request body, ``ChatRequest`` (for ``GET /openapi.json``)."""
        return REQUEST.json_schema(by_alias=True, ref_template=ref_template)

    def decode(self, body: bytes) -> RunInput:
        """Decode a ``DefaultChatTransport`` body; 400 for bad JSON, 422 naming a wrong field."""
        request = decode_body(body, REQUEST)
        if request.messages is None and request.message is not None:
            newest = decode_body(to_json(request.message), NEWEST)
            messages, approvals = _history([newest])
            return RunInput(
                messages=messages,
                thread_id=request.id,
                run_id=new_id("run"),
                variables=dict(request.model_extra or {}),
                approvals=approvals,
                continue_message_id=request.messageId if newest.role == "assistant" else None,
                newest_only=True,
                regenerate=request.trigger == "regenerate-message",
            )
        if request.messages is None:
            problem = "Field required"
            raise RequestError(
                422, "invalid_request", f"the request is invalid: messages: {problem}", [_detail("messages", problem)]
            )
        messages, approvals = _history(request.messages)
        last = request.messages[-1]
        continued = request.messageId if last.role == "assistant" and last.id == request.messageId else None
        return RunInput(
            messages=messages,
            thread_id=request.id,
            run_id=new_id("run"),
            variables=dict(request.model_extra or {}),
            approvals=approvals,
            continue_message_id=continued,
            regenerate=request.trigger == "regenerate-message",
        )

    def ui_messages(self, history: Sequence[tuple[Message, str]], agent: AgentConfig) -> list[dict[str, Any]]:
        """A stored thread as the UIMessages ``useChat({messages})`` takes after a reload."""
        return ui_messages(history, agent.vercel_ai_version)

    def headers(self, agent: AgentConfig) -> Mapping[str, str]:
        """``cache-control``, ``x-vercel-ai-ui-message-stream: v1`` and ``x-accel-buffering``."""
        return HEADERS

    def rejoined(self, history: Sequence[Message]) -> bytes:
        """Nothing: the replay's ``start`` already makes the ``ai`` client rebuild the message."""
        return b""

    def interrupted(self, agent: AgentConfig, message: str, code: str) -> bytes:
        """``error``, ``finish`` and ``[DONE]``: the client keeps the parts it has and shows the error."""
        finish: dict[str, Any] = {"type": "finish"}
        if agent.vercel_ai_version != "v5":
            finish["finishReason"] = "error"
        return sse_frame({"type": "error", "errorText": message}) + sse_frame(finish) + _DONE

    async def encode(
        self, run_input: RunInput, agent: AgentConfig, events: AsyncIterator[RunEvent]
    ) -> AsyncGenerator[bytes, None]:
        """The UI message stream for ``events``; always ends with ``finish`` and ``[DONE]``, never raises."""
        stream = _MessageStream(agent.vercel_ai_version)
        text, reasoning, tools = stream.text, stream.reasoning, stream.tools
        yield sse_frame({"type": "start", "messageId": run_input.continue_message_id or new_id("msg")})
        try:
            async for event in events:
                if isinstance(event, TextDelta):  # deltas first: they are nearly every event
                    yield text[event.id] + to_json(event.delta) + _FRAME_END
                elif isinstance(event, ReasoningDelta):
                    yield reasoning[event.id] + to_json(event.delta) + _FRAME_END
                elif isinstance(event, ToolCallDelta):
                    yield tools[event.tool_call_id] + to_json(event.delta) + _FRAME_END
                elif isinstance(event, RunFinished):
                    ending = stream.end(event.reason, cost_usd=event.cost_usd)
                    break
                elif isinstance(event, RunFailed):
                    ending = stream.end("error", event.message)
                    break
                else:
                    frame = stream.frame(event)
                    if frame:
                        yield frame
            else:
                logger.error("run %r: the events ended without a terminal event", run_input.run_id)
                ending = stream.end("error", MASKED_ERROR)
        except Exception:
            logger.exception("run %r: the run's events failed mid-stream", run_input.run_id)
            ending = stream.end("error", MASKED_ERROR)
        finally:
            await _close(events)
        yield ending


def usage_metadata(usage: RunUsage, cost_usd: float | None) -> dict[str, Any]:
    """``{"usage": {...}, "costUsd": ...}`` for what was reported (empty when nothing was)."""
    metadata: dict[str, Any] = {}
    if usage.reported:
        tokens: dict[str, int] = {
            "inputTokens": usage.input_tokens,
            "outputTokens": usage.output_tokens,
            "totalTokens": usage.total_tokens,
        }
        if usage.reasoning_tokens is not None:
            tokens["reasoningTokens"] = usage.reasoning_tokens
        if usage.cached_input_tokens is not None:
            tokens["cachedInputTokens"] = usage.cached_input_tokens
        metadata["usage"] = tokens
    if cost_usd is not None:
        metadata["costUsd"] = cost_usd
    return metadata


protocol = VercelAIProtocol()
"""The registered ``chatgate.protocols`` entry point."""


async def _close(events: AsyncIterator[RunEvent]) -> None:
    """Close the run's event generator, and so its upstream request, even when the client left early."""
    aclose = getattr(events, "aclose", None)
    if aclose is None:
        return
    try:
        await aclose()
    except Exception:
        logger.exception("closing the run's events failed")


# --- decode ---------------------------------------------------------------------------------------


def _detail(field: str, problem: str) -> dict[str, str]:
    return {"field": field, "problem": problem}


def _history(messages: list[UIMessage]) -> tuple[tuple[Message, ...], tuple[ApprovalResponse, ...]]:
    history: list[Message] = []
    approvals: list[ApprovalResponse] = []
    for message in messages:
        if message.role == "system":
            text = "".join(part.text for part in message.parts if isinstance(part, TextUIPart))
            history.append(SystemMessage(text, id=message.id))
        elif message.role == "user":
            parts = tuple(_user_part(part) for part in message.parts if isinstance(part, TextUIPart | FileUIPart))
            if parts:
                history.append(UserMessage(parts, id=message.id))
        else:
            for index, step in enumerate(_steps(message.parts)):
                history.extend(_assistant_step(step, message.id if index == 0 else f"{message.id}:{index}"))
                approvals.extend(_approvals(step))
    return tuple(history), tuple(approvals)


def _user_part(part: TextUIPart | FileUIPart) -> UserPart:
    if isinstance(part, TextUIPart):
        return TextPart(part.text)
    return FilePart(part.mediaType, part.url, part.filename)


def _steps(parts: list[UIPart]) -> list[list[UIPart]]:
    """Split an assistant message's parts into model steps: at ``step-start``, or text after a tool call."""
    steps: list[list[UIPart]] = [[]]
    after_tool = False
    for part in parts:
        if isinstance(part, StepStartUIPart) or (after_tool and isinstance(part, TextUIPart | ReasoningUIPart)):
            if steps[-1]:
                steps.append([])
            after_tool = False
        if isinstance(part, ToolUIPart):
            after_tool = True
        if not isinstance(part, StepStartUIPart):
            steps[-1].append(part)
    return steps


def _assistant_step(parts: list[UIPart], message_id: str) -> list[Message]:
    content: list[AssistantPart] = []
    results: list[Message] = []
    for part in parts:
        if isinstance(part, TextUIPart):
            content.append(TextPart(part.text))
        elif isinstance(part, ReasoningUIPart):
            content.append(ReasoningPart(part.text, provider_data=_provider_data(part.providerMetadata)))
        elif isinstance(part, ToolUIPart):
            arguments = "{}" if part.input is None else dump_json(part.input).decode()
            data = _provider_data(part.callProviderMetadata)
            content.append(ToolCallPart(part.toolCallId, part.name, arguments, provider_data=data))
            result = _tool_result(part)
            if result is not None:
                results.append(result)
    return [AssistantMessage(tuple(content), id=message_id), *results] if content else []


def _tool_result(part: ToolUIPart) -> ToolMessage | None:
    if part.state == "output-available":
        output = part.output if isinstance(part.output, str) else dump_json(part.output).decode()
        return ToolMessage(part.toolCallId, output)
    if part.state == "output-error":
        return ToolMessage(part.toolCallId, part.errorText or "", is_error=True)
    if part.state == "output-denied":
        reason = part.approval.reason if part.approval is not None else None
        return ToolMessage(part.toolCallId, f"{DENIED} Reason: {reason}" if reason else DENIED, is_error=True)
    return None


def _approvals(parts: list[UIPart]) -> list[ApprovalResponse]:
    return [
        ApprovalResponse(part.approval.id, bool(part.approval.approved), part.approval.reason or "", part.toolCallId)
        for part in parts
        if isinstance(part, ToolUIPart) and part.state == "approval-responded" and part.approval is not None
    ]


def _provider_data(metadata: dict[str, Any] | None) -> Mapping[str, Any] | None:
    if not metadata:
        return None
    ours = metadata.get(METADATA_KEY)
    return ours if isinstance(ours, dict) else metadata


# --- encode ---------------------------------------------------------------------------------------


def _delta_prefix(kind: bytes, id_field: bytes, part_id: str, delta_field: bytes) -> bytes:
    """``data: {"type":KIND,ID_FIELD:ID,DELTA_FIELD:`` - a delta frame up to its JSON string."""
    return b'data: {"type":"' + kind + b'","' + id_field + b'":' + to_json(part_id) + b',"' + delta_field + b'":'


class _MessageStream:
    """One response's open parts and step, and the one place they are closed."""

    __slots__ = ("reasoning", "step_ended", "step_open", "text", "tool_names", "tools", "usage", "version")

    def __init__(self, version: VercelAIVersion) -> None:
        self.version = version
        self.text: dict[str, bytes] = {}  # open span id -> its delta frame prefix
        self.reasoning: dict[str, bytes] = {}
        self.tools: dict[str, bytes] = {}
        self.tool_names: dict[str, str] = {}
        self.step_open = False  # start-step written, finish-step not yet
        self.step_ended = False  # ... and the model step is over: only its tool outcomes may follow
        self.usage = RunUsage()  # what the model calls reported, for ``finish.messageMetadata``

    def frame(self, event: RunEvent) -> bytes:
        """The frames for every event but deltas and terminals (``b""`` for events the UI never sees)."""
        if isinstance(event, TextStart):
            self.text[event.id] = _delta_prefix(b"text-delta", b"id", event.id, b"delta")
            return self._end_ended_step() + sse_frame({"type": "text-start", "id": event.id})
        if isinstance(event, TextEnd):
            del self.text[event.id]
            return sse_frame({"type": "text-end", "id": event.id})
        if isinstance(event, ReasoningStart):
            self.reasoning[event.id] = _delta_prefix(b"reasoning-delta", b"id", event.id, b"delta")
            return self._end_ended_step() + sse_frame({"type": "reasoning-start", "id": event.id})
        if isinstance(event, ReasoningEnd):
            del self.reasoning[event.id]
            chunk: dict[str, Any] = {"type": "reasoning-end", "id": event.id}
            if event.provider_data:
                chunk["providerMetadata"] = {METADATA_KEY: dict(event.provider_data)}
            return sse_frame(chunk)
        if isinstance(event, ToolCallStart):
            self.tools[event.tool_call_id] = _delta_prefix(
                b"tool-input-delta", b"toolCallId", event.tool_call_id, b"inputTextDelta"
            )
            self.tool_names[event.tool_call_id] = event.name
            start = {"type": "tool-input-start", "toolCallId": event.tool_call_id, "toolName": event.name}
            return self._end_ended_step() + sse_frame(start)
        if isinstance(event, ToolCallEnd):
            return self._tool_input(event)
        if isinstance(event, ToolResult):
            if event.is_error:
                return _tool_error(event.tool_call_id, event.content)
            output = event.output if event.output is not None else event.content
            return sse_frame({"type": "tool-output-available", "toolCallId": event.tool_call_id, "output": output})
        if isinstance(event, ToolApprovalRequested):
            if self.version == "v5":
                return _tool_error(event.tool_call_id, NO_APPROVALS)
            chunk = {"type": "tool-approval-request", "approvalId": event.approval_id, "toolCallId": event.tool_call_id}
            return sse_frame(chunk)
        if isinstance(event, ToolDenied):
            if self.version == "v5":
                return _tool_error(event.tool_call_id, DENIED)
            return sse_frame({"type": "tool-output-denied", "toolCallId": event.tool_call_id})
        if isinstance(event, StepStarted):
            previous = self._finish_step()
            self.step_open = True
            return previous + b'data: {"type":"start-step"}\n\n'
        if isinstance(event, StepFinished):
            # finish-step waits for the step's tool outputs and approval requests, which go inside
            # it, as the AI SDK's own server sends them.
            self.step_ended = self.step_open
            return self._close_parts()
        if isinstance(event, Usage):
            self.usage.add(event)
        return b""  # Usage (until ``finish``), ModelFinished: nothing a useChat client reads

    def end(self, reason: FinishReason, error_text: str | None = None, *, cost_usd: float | None = None) -> bytes:
        """The stream's last frames: close what is open, ``error`` if failed, ``finish``, ``[DONE]``.

        ``finish.messageMetadata`` carries the run's usage and cost (useChat's ``message.metadata``).
        """
        error = sse_frame({"type": "error", "errorText": error_text}) if error_text is not None else b""
        finish: dict[str, Any] = {"type": "finish"}
        if self.version != "v5":
            finish["finishReason"] = _FINISH_REASONS[reason]
        metadata = usage_metadata(self.usage, cost_usd)
        if metadata:
            finish["messageMetadata"] = metadata
        return self._close_parts() + error + self._finish_step() + sse_frame(finish) + _DONE

    def _tool_input(self, event: ToolCallEnd) -> bytes:
        del self.tools[event.tool_call_id]
        name = self.tool_names.pop(event.tool_call_id)
        try:
            tool_input = from_json(event.arguments or "{}")
        except ValueError:
            tool_input = None
        if not isinstance(tool_input, dict):  # cut off: the runner answers it with an error result
            error = {"type": "tool-input-error", "toolCallId": event.tool_call_id, "toolName": name}
            return sse_frame({**error, "input": event.arguments, "errorText": INVALID_ARGUMENTS})
        chunk: dict[str, Any] = {
            "type": "tool-input-available",
            "toolCallId": event.tool_call_id,
            "toolName": name,
            "input": tool_input,
        }
        if event.provider_data:
            chunk["providerMetadata"] = {METADATA_KEY: dict(event.provider_data)}
        return sse_frame(chunk)

    def _close_parts(self) -> bytes:
        frames = [sse_frame({"type": "text-end", "id": part_id}) for part_id in self.text]
        frames += [sse_frame({"type": "reasoning-end", "id": part_id}) for part_id in self.reasoning]
        frames += [_tool_error(call_id, CUT_OFF) for call_id in self.tools]
        self.text.clear()
        self.reasoning.clear()
        self.tools.clear()
        self.tool_names.clear()
        return b"".join(frames)

    def _finish_step(self) -> bytes:
        if not self.step_open:
            return b""
        self.step_open = self.step_ended = False
        return b'data: {"type":"finish-step"}\n\n'

    def _end_ended_step(self) -> bytes:
        """``finish-step`` before content that is not the ended step's own (the max-steps notice)."""
        return self._finish_step() if self.step_ended else b""


def _tool_error(tool_call_id: str, error_text: str) -> bytes:
    return sse_frame({"type": "tool-output-error", "toolCallId": tool_call_id, "errorText": error_text})

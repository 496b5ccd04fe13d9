"""AG-UI 1.0 events: a run's events encoded as an SSE stream of AG-UI events.

``RUN_STARTED`` (with ``input.messages`` naming the request's unanswered tool calls, when
it has any, so a resumed run's ``TOOL_CALL_RESULT`` answers a call this run named), then one event per
run event, then exactly one of ``RUN_FINISHED`` or ``RUN_ERROR``. Reasoning spans open
``REASONING_START`` and ``REASONING_MESSAGE_START`` under the same id; ``provider_data`` leaves as
``REASONING_ENCRYPTED_VALUE`` (its JSON text). A server-held thread's ``RunInput.snapshot`` goes out as
``MESSAGES_SNAPSHOT`` right after ``RUN_STARTED``. The run's usage (summed by the runner, one
``TokenUsage`` per model) goes on ``RUN_FINISHED.usage`` or ``RUN_ERROR.usage``; tool approval requests
become ``RUN_FINISHED`` interrupts, frontend tool calls the run waits on its ``pendingToolCallIds``.
A retracted step (``StepRetracted``) becomes a ``MESSAGES_SNAPSHOT`` of the messages without it.
Frames are LF-only and carry no ``null``.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncGenerator, AsyncIterator, Callable, Mapping
from typing import Any

from pydantic_core import to_json

from chatgate.adapters.ag_ui.snapshot import restated_messages, snapshot_messages, source_value
from chatgate.adapters.base import sse_frame
from chatgate.config import AgentConfig
from chatgate.events import (
    ModelUsage,
    ReasoningDelta,
    ReasoningEnd,
    ReasoningStart,
    RunEvent,
    RunFailed,
    RunFinished,
    SourceCited,
    StepFinished,
    StepRetracted,
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
)
from chatgate.history import (
    AssistantMessage,
    SourcePart,
    ToolMessage,
)
from chatgate.ids import new_id
from chatgate.run_input import RunInput
from chatgate.strict_json import dump_json

__all__ = ["encode_run", "token_usage"]

logger = logging.getLogger("chatgate.adapters.ag_ui")

_FRAME_END = b"}\n\n"
SOURCE_EVENT = "source"
"""The name of the ``CUSTOM`` event that carries a cited source (docs/files.md#sources)."""


def encode_run(run_input: RunInput, agent: AgentConfig, events: AsyncIterator[RunEvent]) -> AsyncGenerator[bytes, None]:
    """The AG-UI event stream for one run; it always ends in ``RUN_FINISHED`` or ``RUN_ERROR``."""
    return _RunEncoder(run_input, agent).stream(events)


def _prefix(event_type: str, id_key: str, id_value: str) -> bytes:
    """The bytes of a delta frame up to its delta string: ``data: {"type":…,"<id_key>":…,"delta":``."""
    return (
        b'data: {"type":"' + event_type.encode() + b'","' + id_key.encode() + b'":' + to_json(id_value) + b',"delta":'
    )


class _RunEncoder:
    """The state of one run's stream: what is open, usage so far, interrupts waiting for a human."""

    def __init__(self, run_input: RunInput, agent: AgentConfig) -> None:
        self._run = {"threadId": run_input.thread_id, "runId": run_input.run_id}
        self._snapshot = run_input.snapshot
        # What the client holds before this run's events: a retraction's snapshot restates it.
        self._before = run_input.snapshot if run_input.snapshot is not None else run_input.messages
        lineage = {"parentRunId": run_input.parent_run_id} if run_input.parent_run_id else {}
        self._started: dict[str, Any] = {"type": "RUN_STARTED", **self._run, **lineage}
        carrier = _unanswered_calls(run_input)
        if carrier is not None:
            # tools and context are required fields for pre-1.0 readers (CopilotKit's @ag-ui/client 0.0.x).
            tools = [
                {"name": tool.name, "description": tool.description, "parameters": tool.parameters}
                for tool in run_input.tools
            ]
            self._started["input"] = {**self._run, **lineage, "messages": [carrier], "tools": tools, "context": []}
        self._agent = agent
        # pendingToolCallIds is 1.0's: pre-1.0 readers (CopilotKit's pinned 0.0.x) hold a strict {type:
        # "success"} and reject it. 1.0 clients declare their protocolVersion; older ones send none.
        self._names_pending = _declares_1_0(run_input.protocol_version)
        # Open things, in opening order; each maps its id to the pre-built prefix of its delta frames.
        self._texts: dict[str, bytes] = {}
        self._reasoning: dict[str, bytes] = {}
        self._tool_calls: dict[str, bytes] = {}
        self._steps: list[str] = []
        self._step_reasoning: list[str] = []  # the reasoning messages the current step opened
        self._parent_message_id: str | None = None
        self._interrupts: list[dict[str, Any]] = []
        self._handlers: dict[type[Any], Callable[[Any], bytes]] = {
            StepStarted: self._step_started,
            StepFinished: self._step_finished,
            StepRetracted: self._step_retracted,
            TextStart: self._text_start,
            TextEnd: self._text_end,
            ReasoningStart: self._reasoning_start,
            ReasoningEnd: self._reasoning_end,
            ToolCallStart: self._tool_call_start,
            ToolCallEnd: self._tool_call_end,
            ToolResult: self._tool_result,
            ToolDenied: self._tool_denied,
            ToolApprovalRequested: self._approval_requested,
            SourceCited: self._source,
        }

    async def stream(self, events: AsyncIterator[RunEvent]) -> AsyncGenerator[bytes, None]:
        """Frames for ``events``; ends with exactly one terminal event whatever the iterator does."""
        yield sse_frame(self._started)
        if self._snapshot is not None:
            yield sse_frame({"type": "MESSAGES_SNAPSHOT", "messages": snapshot_messages(self._snapshot)})
        texts, reasoning, tool_calls, handlers = self._texts, self._reasoning, self._tool_calls, self._handlers
        try:
            async for event in events:
                # The per-token path: one dict lookup and one string serialization per frame.
                if type(event) is TextDelta:
                    yield texts[event.id] + to_json(event.delta) + _FRAME_END
                elif type(event) is ReasoningDelta:
                    yield reasoning[event.id] + to_json(event.delta) + _FRAME_END
                elif type(event) is ToolCallDelta:
                    yield tool_calls[event.tool_call_id] + to_json(event.delta) + _FRAME_END
                elif type(event) is RunFinished:
                    yield self._end(self._finished(event))
                    return
                elif type(event) is RunFailed:
                    yield self._end(self._error(event.message, event.code, event.usage))
                    return
                else:
                    handler = handlers.get(type(event))
                    if handler is not None:
                        frames = handler(event)
                        if frames:
                            yield frames
            logger.error("run %r: the event stream ended without a terminal event", self._run["runId"])
            yield self._end(self._error("The run ended unexpectedly.", "incomplete_run"))
        except Exception:
            logger.exception("run %r: encoding the AG-UI stream failed", self._run["runId"])
            yield self._end(self._error("An internal error occurred.", "internal_error"))
        finally:
            aclose = getattr(events, "aclose", None)
            if aclose is not None:
                await aclose()

    def _end(self, terminal: bytes) -> bytes:
        """``terminal`` after closing, innermost first, everything still open: the one place that does so."""
        frames = [sse_frame({"type": "TOOL_CALL_END", "toolCallId": call_id}) for call_id in reversed(self._tool_calls)]
        for message_id in reversed(self._reasoning):
            frames.append(sse_frame({"type": "REASONING_MESSAGE_END", "messageId": message_id}))
            frames.append(sse_frame({"type": "REASONING_END", "messageId": message_id}))
        frames += [
            sse_frame({"type": "TEXT_MESSAGE_END", "messageId": message_id}) for message_id in reversed(self._texts)
        ]
        frames += [sse_frame({"type": "STEP_FINISHED", "stepName": name}) for name in reversed(self._steps)]
        self._tool_calls.clear()
        self._reasoning.clear()
        self._texts.clear()
        self._steps.clear()
        frames.append(terminal)
        return b"".join(frames)

    def _finished(self, finished: RunFinished) -> bytes:
        event: dict[str, Any] = {"type": "RUN_FINISHED", **self._run}
        if finished.stopped:
            event["outcome"] = {"type": "cancelled"}
        elif self._interrupts:
            event["outcome"] = {"type": "interrupt", "interrupts": self._interrupts}
        elif finished.pending_tool_call_ids and self._names_pending:
            event["outcome"] = {"type": "success", "pendingToolCallIds": list(finished.pending_tool_call_ids)}
        prompt = finished.prompt_metadata()
        if prompt:  # RUN_FINISHED.result is free-form in @ag-ui/core: the prompt the run answered under
            event["result"] = prompt
        usage = [token_usage(entry) for entry in finished.usage]
        if usage and finished.cost_usd is not None:
            usage[0]["costUsd"] = finished.cost_usd
        if usage:
            event["usage"] = usage
        return sse_frame(event)

    def _error(self, message: str, code: str, usage: tuple[ModelUsage, ...] = ()) -> bytes:
        event: dict[str, Any] = {"type": "RUN_ERROR", "message": message, "code": code}
        if usage:
            event["usage"] = [token_usage(entry) for entry in usage]
        return sse_frame(event)

    def _step_started(self, event: StepStarted) -> bytes:
        self._steps.append(event.name)
        self._parent_message_id = None
        self._step_reasoning = []
        return sse_frame({"type": "STEP_STARTED", "stepName": event.name})

    def _step_finished(self, event: StepFinished) -> bytes:
        self._steps.remove(event.name)
        return sse_frame({"type": "STEP_FINISHED", "stepName": event.name})

    def _step_retracted(self, event: StepRetracted) -> bytes:
        """What the step left open closed, then a ``MESSAGES_SNAPSHOT`` without the step's messages.

        The snapshot restates the client's messages before the run and the run's earlier steps
        (``event.kept``); a client drops every message it holds that the snapshot lacks (but reasoning, when
        the snapshot holds none: then the step's reasoning is restated empty). Open tool calls
        are ended after it, when no message holds them any more: no subscriber sees a partial call complete.
        """
        frames = [sse_frame({"type": "TEXT_MESSAGE_END", "messageId": message_id}) for message_id in self._texts]
        for message_id in self._reasoning:
            frames.append(sse_frame({"type": "REASONING_MESSAGE_END", "messageId": message_id}))
            frames.append(sse_frame({"type": "REASONING_END", "messageId": message_id}))
        messages = restated_messages(self._before) + snapshot_messages(event.kept)
        if self._step_reasoning and not any(message["role"] == "reasoning" for message in messages):
            # @ag-ui/client keeps every reasoning message when a snapshot holds none: restate the step's, emptied.
            messages += [{"id": message_id, "role": "reasoning", "content": ""} for message_id in self._step_reasoning]
        self._step_reasoning = []
        frames.append(sse_frame({"type": "MESSAGES_SNAPSHOT", "messages": messages}))
        frames += [sse_frame({"type": "TOOL_CALL_END", "toolCallId": call_id}) for call_id in self._tool_calls]
        self._texts.clear()
        self._reasoning.clear()
        self._tool_calls.clear()
        self._parent_message_id = None
        return b"".join(frames)

    def _text_start(self, event: TextStart) -> bytes:
        self._texts[event.id] = _prefix("TEXT_MESSAGE_CONTENT", "messageId", event.id)
        self._parent_message_id = event.id
        return sse_frame({"type": "TEXT_MESSAGE_START", "messageId": event.id, "role": "assistant"})

    def _text_end(self, event: TextEnd) -> bytes:
        del self._texts[event.id]
        return sse_frame({"type": "TEXT_MESSAGE_END", "messageId": event.id})

    def _reasoning_start(self, event: ReasoningStart) -> bytes:
        self._reasoning[event.id] = _prefix("REASONING_MESSAGE_CONTENT", "messageId", event.id)
        self._step_reasoning.append(event.id)
        return sse_frame({"type": "REASONING_START", "messageId": event.id}) + sse_frame(
            {"type": "REASONING_MESSAGE_START", "messageId": event.id, "role": "reasoning"}
        )

    def _reasoning_end(self, event: ReasoningEnd) -> bytes:
        del self._reasoning[event.id]
        frames = sse_frame({"type": "REASONING_MESSAGE_END", "messageId": event.id})
        if event.provider_data:
            frames += _encrypted_value("message", event.id, event.provider_data)
        return frames + sse_frame({"type": "REASONING_END", "messageId": event.id})

    def _tool_call_start(self, event: ToolCallStart) -> bytes:
        self._tool_calls[event.tool_call_id] = _prefix("TOOL_CALL_ARGS", "toolCallId", event.tool_call_id)
        if self._parent_message_id is None:
            # No text in this step: name a parent anyway, so the client keeps the step's calls in one message.
            self._parent_message_id = new_id("msg")
        return sse_frame(
            {
                "type": "TOOL_CALL_START",
                "toolCallId": event.tool_call_id,
                "toolCallName": event.name,
                "parentMessageId": self._parent_message_id,
            }
        )

    def _tool_call_end(self, event: ToolCallEnd) -> bytes:
        del self._tool_calls[event.tool_call_id]
        frames = sse_frame({"type": "TOOL_CALL_END", "toolCallId": event.tool_call_id})
        if event.provider_data:
            frames += _encrypted_value("tool-call", event.tool_call_id, event.provider_data)
        return frames

    def _tool_result(self, event: ToolResult) -> bytes:
        return _tool_call_result(event.tool_call_id, event.content)

    def _tool_denied(self, event: ToolDenied) -> bytes:
        content = f"Denied by the user: {event.reason}" if event.reason else "Denied by the user."
        return _tool_call_result(event.tool_call_id, content)

    def _approval_requested(self, event: ToolApprovalRequested) -> bytes:
        self._interrupts.append(
            {
                "id": event.approval_id,
                "reason": "tool_approval",
                "toolCallId": event.tool_call_id,
                "message": f"Approve the call to {event.tool_name}?",
            }
        )
        return b""

    def _source(self, event: SourceCited) -> bytes:
        """A ``CUSTOM`` event named ``source``: AG-UI has no event of its own for a cited source."""
        value = source_value(SourcePart(event.source_id, event.url, event.title, event.media_type, event.filename))
        if self._parent_message_id is not None:
            value["messageId"] = self._parent_message_id  # the answer's message that cites it
        return sse_frame({"type": "CUSTOM", "name": SOURCE_EVENT, "value": value})


def _declares_1_0(version: str | None) -> bool:
    """Whether a client's ``protocolVersion`` is 1.0 or later (``"1.0"``, ``"1.0.0"``, ``"2"``)."""
    major = (version or "").split(".", 1)[0]
    return major.isdigit() and int(major) >= 1


def token_usage(usage: ModelUsage) -> dict[str, Any]:
    """One model's usage as an AG-UI ``TokenUsage``; a count nobody reported is left out, never 0."""
    entry: dict[str, Any] = {
        "provider": usage.provider,
        "model": usage.model,
        "inputTokens": usage.input_tokens,
        "outputTokens": usage.output_tokens,
        "totalTokens": usage.total_tokens,
    }
    if usage.reasoning_tokens is not None:
        entry["reasoningTokens"] = usage.reasoning_tokens
    if usage.cached_input_tokens is not None:
        entry["cachedInputTokens"] = usage.cached_input_tokens
    if usage.cache_write_input_tokens is not None:
        entry["cacheWriteInputTokens"] = usage.cache_write_input_tokens
    return entry


def _unanswered_calls(run_input: RunInput) -> dict[str, Any] | None:
    """The last assistant message, as an AG-UI message, when some of its tool calls have no result yet.

    A resumed run answers calls made in an earlier run. ``RUN_STARTED.input.messages`` names them, so
    a reader that knows only this run's calls (the reference client's verifier seeds its per-run
    state from ``input.messages``) accepts the ``TOOL_CALL_RESULT`` that follows.
    """
    answered = {message.tool_call_id for message in run_input.messages if isinstance(message, ToolMessage)}
    last = next((m for m in reversed(run_input.messages) if isinstance(m, AssistantMessage)), None)
    if last is None or not last.id or all(call.tool_call_id in answered for call in last.tool_calls):
        return None
    calls = [
        {"id": call.tool_call_id, "type": "function", "function": {"name": call.name, "arguments": call.arguments}}
        for call in last.tool_calls
    ]
    return {"id": last.id, "role": "assistant", "toolCalls": calls}


def _tool_call_result(tool_call_id: str, content: str) -> bytes:
    return sse_frame(
        {
            "type": "TOOL_CALL_RESULT",
            "messageId": new_id("msg"),
            "toolCallId": tool_call_id,
            "content": content,
            "role": "tool",
        }
    )


def _encrypted_value(subtype: str, entity_id: str, provider_data: Mapping[str, Any]) -> bytes:
    return sse_frame(
        {
            "type": "REASONING_ENCRYPTED_VALUE",
            "subtype": subtype,
            "entityId": entity_id,
            "encryptedValue": dump_json(provider_data).decode(),
        }
    )

"""useChat streams: a run's events encoded as the AI SDK's UI message stream.

``start``, then one chunk per run event, then ``finish`` and ``[DONE]``. Deltas are written
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
  request or a denial reaches a v5 client as ``tool-output-error`` saying so. v7 alone gets
  ``finishReason: "interrupted"`` (ai 7.0.149 on) when the upstream broke off: no ``error`` chunk, the
  partial answer stands, as the AI SDK's own providers end such a stream. v7 alone gets ``reset-step``
  for a ``StepRetracted`` (the step's model failed mid-answer and another answers it): the client drops
  the step's parts and the replacement streams into the same step.
- Usage: the run's usage (summed by the runner) and cost go on ``finish.messageMetadata``
  (``{usage, model, provider, costUsd}``), useChat's ``message.metadata``, with the prompt the run
  answered under (``promptVersion``, ``promptHash``, ``variant``: docs/prompts.md) and its ``runId``
  (feedback on the answer names it). A stopped run (someone
  called ``POST .../stop``) ends as the AI SDK's server ends an aborted one: its usage as a
  ``message-metadata`` chunk, then ``abort`` (no ``finish``).
"""

from __future__ import annotations

import logging
from collections.abc import AsyncGenerator, AsyncIterator, Mapping
from typing import Any, Literal

from pydantic_core import from_json, to_json

from chatgate.adapters.base import sse_frame
from chatgate.adapters.vercel_ai.messages import ui_source
from chatgate.adapters.vercel_ai.wire import (
    DENIED,
    METADATA_KEY,
)
from chatgate.config import AgentConfig, VercelAIVersion
from chatgate.events import (
    FinishReason,
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
from chatgate.ids import new_id
from chatgate.run_input import RunInput

__all__ = ["MASKED_ERROR", "encode_run", "interrupted_ending", "usage_metadata"]

logger = logging.getLogger("chatgate.adapters.vercel_ai")

MASKED_ERROR = "An error occurred."
"""The error text for failures whose message is not known to be safe for a client."""

CUT_OFF = "The tool call was cut off."
INVALID_ARGUMENTS = "The model's tool arguments were cut off: they are not a complete JSON object."
NO_APPROVALS = "This tool call needs a human's approval, which this client (AI SDK 5) cannot give."

_DONE = b"data: [DONE]\n\n"
_ABORT = b'data: {"type":"abort"}\n\n'
_RESET_STEP = b'data: {"type":"reset-step"}\n\n'
_FRAME_END = b"}\n\n"
_FINISH_REASONS: Mapping[FinishReason | Literal["interrupted"], str] = {
    "interrupted": "interrupted",
    "stop": "stop",
    "length": "length",
    "tool_calls": "tool-calls",
    "content_filter": "content-filter",
    "error": "error",
    "other": "other",
}


async def encode_run(
    run_input: RunInput, agent: AgentConfig, events: AsyncIterator[RunEvent]
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
                metadata = usage_metadata(event.usage, event.cost_usd) | event.prompt_metadata()
                if event.run_id:
                    metadata["runId"] = event.run_id  # what feedback on a stateless answer names
                ending = stream.aborted(metadata) if event.stopped else stream.end(event.reason, metadata=metadata)
                break
            elif isinstance(event, RunFailed):
                metadata = usage_metadata(event.usage, None)
                if event.interrupted and agent.vercel_ai_version == "v7":
                    ending = stream.end("interrupted", metadata=metadata)
                else:
                    ending = stream.end("error", event.message, metadata=metadata)
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


def usage_metadata(usage: tuple[ModelUsage, ...], cost_usd: float | None) -> dict[str, Any]:
    """``{"usage": {...}, "model", "provider", "costUsd"}`` for what was reported (empty when nothing was).

    ``usage`` counts as AG-UI's ``TokenUsage`` does (the same numbers ``RUN_FINISHED.usage`` carries);
    ``model`` and ``provider`` name the one model that answered (a run has one).
    """
    metadata: dict[str, Any] = {}
    if usage:
        first = usage[0]
        tokens: dict[str, int] = {
            "inputTokens": sum(entry.input_tokens for entry in usage),
            "outputTokens": sum(entry.output_tokens for entry in usage),
            "totalTokens": sum(entry.total_tokens for entry in usage),
        }
        for key, counts in (
            ("reasoningTokens", [entry.reasoning_tokens for entry in usage]),
            ("cachedInputTokens", [entry.cached_input_tokens for entry in usage]),
            ("cacheWriteInputTokens", [entry.cache_write_input_tokens for entry in usage]),
        ):
            reported = [count for count in counts if count is not None]
            if reported:
                tokens[key] = sum(reported)
        metadata["usage"] = tokens
        if len(usage) == 1:
            metadata["model"], metadata["provider"] = first.model, first.provider
    if cost_usd is not None:
        metadata["costUsd"] = cost_usd
    return metadata


def interrupted_ending(agent: AgentConfig, message: str) -> bytes:
    """``error``, ``finish`` and ``[DONE]``: the client keeps the parts it has and shows the error."""
    finish: dict[str, Any] = {"type": "finish"}
    if agent.vercel_ai_version != "v5":
        finish["finishReason"] = "error"
    return sse_frame({"type": "error", "errorText": message}) + sse_frame(finish) + _DONE


async def _close(events: AsyncIterator[RunEvent]) -> None:
    """Close the run's event generator, and so its upstream request, even when the client left early."""
    aclose = getattr(events, "aclose", None)
    if aclose is None:
        return
    try:
        await aclose()
    except Exception:
        logger.exception("closing the run's events failed")


def _delta_prefix(kind: bytes, id_field: bytes, part_id: str, delta_field: bytes) -> bytes:
    """``data: {"type":KIND,ID_FIELD:ID,DELTA_FIELD:`` - a delta frame up to its JSON string."""
    return b'data: {"type":"' + kind + b'","' + id_field + b'":' + to_json(part_id) + b',"' + delta_field + b'":'


class _MessageStream:
    """One response's open parts and step, and the one place they are closed."""

    __slots__ = ("reasoning", "step_ended", "step_open", "text", "tool_names", "tools", "version")

    def __init__(self, version: VercelAIVersion) -> None:
        self.version = version
        self.text: dict[str, bytes] = {}  # open span id -> its delta frame prefix
        self.reasoning: dict[str, bytes] = {}
        self.tools: dict[str, bytes] = {}
        self.tool_names: dict[str, str] = {}
        self.step_open = False  # start-step written, finish-step not yet
        self.step_ended = False  # ... and the model step is over: only its tool outcomes may follow

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
        if isinstance(event, SourceCited):
            return sse_frame(ui_source(event.source_id, event.url, event.title, event.media_type, event.filename))
        if isinstance(event, StepRetracted):
            return self._retracted()
        return b""  # Usage (the runner sums it for the ending), ModelFinished: nothing a useChat client reads

    def end(
        self,
        reason: FinishReason | Literal["interrupted"],
        error_text: str | None = None,
        *,
        metadata: Mapping[str, Any] | None = None,
    ) -> bytes:
        """The stream's last frames: close what is open, ``error`` if failed, ``finish``, ``[DONE]``.

        ``finish.messageMetadata`` carries the run's usage and cost (useChat's ``message.metadata``).
        """
        error = sse_frame({"type": "error", "errorText": error_text}) if error_text is not None else b""
        finish: dict[str, Any] = {"type": "finish"}
        if self.version != "v5":
            finish["finishReason"] = _FINISH_REASONS[reason]
        if metadata:
            finish["messageMetadata"] = dict(metadata)
        return self._close_parts() + error + self._finish_step() + sse_frame(finish) + _DONE

    def aborted(self, metadata: Mapping[str, Any]) -> bytes:
        """A stopped run's last frames: close what is open, its usage (``message-metadata``), ``abort``."""
        usage = sse_frame({"type": "message-metadata", "messageMetadata": dict(metadata)}) if metadata else b""
        return self._close_parts() + self._finish_step() + usage + _ABORT + _DONE

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

    def _retracted(self) -> bytes:
        """``reset-step`` (ai 7): the client drops the step's parts, open ones too, and keeps its ``step-start``.

        Nothing is closed first: a ``text-end`` or a tool error would be parts of the step it drops. Older
        versions have no such chunk (the runner retracts nothing for them): their open parts are closed.
        """
        if self.version != "v7":
            return self._close_parts()
        self.text.clear()
        self.reasoning.clear()
        self.tools.clear()
        self.tool_names.clear()
        return _RESET_STEP

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

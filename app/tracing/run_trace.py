"""The spans of one run, per the OpenTelemetry GenAI semantic conventions (``SEMCONV_VERSION``).

``RunTrace`` is the ``invoke_agent {agent}`` span of one chat request (or of a detached run on a stored
thread, which outlives its request); the runner reports to it once per model call (``chat {model}``),
server tool call (``execute_tool {tool}``) and approval (``approval {tool}``). Children name their
parent explicitly: the runner is an async generator, and an attached OpenTelemetry context would not
survive its suspensions. Nothing here runs per token.

The spans are ``RecordedSpan``s (``recorder.py``): plain data while they run, handed to the SDK's span
processor as ``ReadableSpan``s as they end, without the SDK's ``Span`` and its locks in between.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from functools import lru_cache
from typing import TYPE_CHECKING, Any, Protocol

from opentelemetry.trace import SpanKind, Status, StatusCode
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

from chatgate.caller import Caller
from chatgate.config import AgentConfig
from chatgate.errors import ProviderError, RequestError
from chatgate.events import ModelFinished, ToolDenied, ToolResult, Usage
from chatgate.history import AssistantMessage, ToolCallPart
from chatgate.telemetry import REQUEST_TRACE, error_kind
from chatgate.tracing.content import messages_json, span_text

if TYPE_CHECKING:
    from chatgate.providers import ModelRequest
    from chatgate.run_input import RunInput
    from chatgate.tracing.recorder import RecordedSpan
    from chatgate.tracing.setup import Telemetry

__all__ = ["SEMCONV_VERSION", "ModelCallTrace", "RunTrace", "ToolTrace", "TracedAgent"]


class _TracedPrompt(Protocol):
    @property
    def is_static(self) -> bool: ...

    @property
    def template(self) -> str: ...


class TracedAgent(Protocol):
    """What a run's span reads of its agent (``chatgate.run.Agent``): tracing sits below ``run``."""

    @property
    def name(self) -> str:
        """The agent's name."""
        ...

    @property
    def config(self) -> AgentConfig:
        """The agent's configuration."""
        ...

    @property
    def prompt(self) -> _TracedPrompt | None:
        """Its system prompt template, if any."""
        ...


SEMCONV_VERSION = "1.37.0"
"""The OpenTelemetry semantic conventions version whose GenAI spans these follow."""

# model_settings names (each API's own) -> the conventions' request attributes.
_SETTINGS = {
    "temperature": "gen_ai.request.temperature",
    "top_p": "gen_ai.request.top_p",
    "top_k": "gen_ai.request.top_k",
    "max_tokens": "gen_ai.request.max_tokens",
    "max_completion_tokens": "gen_ai.request.max_tokens",
    "max_output_tokens": "gen_ai.request.max_tokens",
    "num_predict": "gen_ai.request.max_tokens",
    "frequency_penalty": "gen_ai.request.frequency_penalty",
    "presence_penalty": "gen_ai.request.presence_penalty",
    "seed": "gen_ai.request.seed",
    "stop": "gen_ai.request.stop_sequences",
    "stop_sequences": "gen_ai.request.stop_sequences",
}
_MAX_HEADER_CHARS = 256
_PROPAGATOR = TraceContextTextMapPropagator()


class RunTrace:
    """The ``invoke_agent`` span of one run, and the parent of its model call, tool and approval spans."""

    __slots__ = (
        "_agent",
        "_attributes",
        "_ended",
        "_recorder",
        "_recording",
        "_settled",
        "capture_content",
        "span",
        "trace_id",
    )

    def __init__(
        self,
        telemetry: Telemetry,
        agent: TracedAgent,
        *,
        protocol: str,
        protocol_version: str | None = None,
        caller: Caller,
        headers: Mapping[str, str],
    ) -> None:
        self._recorder = recorder = telemetry.recorder
        self._agent = agent
        self.capture_content = telemetry.capture_content
        self._ended = False
        self._settled = False  # finished() or failed() said how the run ended
        config = agent.config
        attributes: dict[str, Any] = {
            "gen_ai.operation.name": "invoke_agent",
            "gen_ai.agent.name": agent.name,
            "gen_ai.provider.name": config.provider_name,
            "chatgate.protocol": protocol,
            "chatgate.system_prompt.policy": config.manage_system_prompt,
        }
        if protocol_version is not None:
            attributes["chatgate.protocol.version"] = protocol_version
        if caller.key_id:
            attributes["chatgate.caller.key_id"] = caller.key_id
        if caller.user:
            attributes["chatgate.caller.user"] = span_text(caller.user)
        if caller.person:
            attributes["chatgate.caller.person"] = span_text(caller.person)
        user_agent = headers.get("user-agent")
        if user_agent:
            attributes["user_agent.original"] = span_text(user_agent[:_MAX_HEADER_CHARS])
        prompt = agent.prompt
        if prompt is not None:
            attributes["chatgate.prompt.kind"] = "static" if prompt.is_static else "template"
            attributes["chatgate.prompt.version"] = _prompt_version(prompt.template)
        # A frontend's traceparent (W3C Trace Context) continues its trace.
        parent = _PROPAGATOR.extract(headers) if "traceparent" in headers else None
        self.span = span = recorder.start_run(f"invoke_agent {agent.name}", SpanKind.SERVER, parent)
        span.attributes.update(attributes)
        self._attributes = span.attributes
        # An unsampled run (sample_ratio, or a frontend's unsampled traceparent) records nothing: its
        # children are not started at all, and no attributes are worked out for them.
        self._recording = span.recording
        self.trace_id = format(span.context.trace_id, "032x")
        request_trace = REQUEST_TRACE.get()
        if request_trace is not None:  # the request's log lines carry the trace id from now on
            request_trace.trace_id = self.trace_id

    @property
    def ids(self) -> tuple[str, str] | None:
        """The run span's trace and span ids (hex), when it is recorded: what its feedback goes under."""
        if not self._recording:
            return None
        return self.trace_id, format(self.span.context.span_id, "016x")

    def started(self, run_input: RunInput, request: ModelRequest, stripped: int) -> None:
        """The run's input is known: its thread, run id, the policy's stripped count, its messages if captured."""
        if not self._recording:
            return
        attributes: dict[str, Any] = {"chatgate.system_prompt.stripped": stripped}
        if run_input.thread_id:
            attributes["gen_ai.conversation.id"] = span_text(run_input.thread_id)
        if run_input.run_id:
            attributes["chatgate.run.id"] = span_text(run_input.run_id)
        if self.capture_content:
            attributes["gen_ai.input.messages"] = messages_json(request.messages)
        self._attributes.update(attributes)

    def prompt_used(self, version: str | None, content_hash: str | None, variant: str | None) -> None:
        """The prompt the run answers under: its version (label, else hash), hash, and the agent's variant."""
        if version is not None:
            self._attributes["chatgate.prompt.version"] = span_text(version)
        if content_hash is not None:
            self._attributes["chatgate.prompt.hash"] = content_hash
        if variant is not None:
            self._attributes["chatgate.prompt.variant"] = span_text(variant)

    def thread_prompt(self, name: str | None, prompt: _TracedPrompt | None) -> None:
        """A stored thread's own system message stands in for the agent's: its named prompt (``name``) or text."""
        attributes: dict[str, Any] = {"chatgate.prompt.source": "prompt" if name else "thread"}
        if name:
            attributes["chatgate.prompt.name"] = span_text(name)
        if prompt is not None:  # as the agent's own prompt is described in __init__
            attributes["chatgate.prompt.kind"] = "static" if prompt.is_static else "template"
            attributes["chatgate.prompt.version"] = hashlib.sha256(prompt.template.encode()).hexdigest()[:12]
        self._attributes.update(attributes)

    def model_call(
        self, request: ModelRequest, step: int, provider: str | None = None, failover: str | None = None
    ) -> ModelCallTrace:
        """The ``chat {model}`` span of one model call, started now.

        ``provider`` is the provider called (the agent's by default); ``failover`` why the step moved to
        this model of the agent's fallback chain (``chatgate.failover.reason``).
        """
        if not self._recording:
            return ModelCallTrace(self.span, False, recording=False)
        attributes: dict[str, Any] = {
            "gen_ai.operation.name": "chat",
            "gen_ai.provider.name": provider or self._agent.config.provider_name,
            "gen_ai.request.model": request.model,
            "chatgate.step": step,
        }
        if failover is not None:
            attributes["chatgate.failover.reason"] = failover
        for name, value in request.settings.items():
            key = _SETTINGS.get(name)
            if key is None:
                continue
            if isinstance(value, str):
                value = [value] if key.endswith("stop_sequences") else value
            if isinstance(value, (int, float, str)) or (
                isinstance(value, list) and all(isinstance(item, str) for item in value)
            ):
                attributes[key] = value
        if self.capture_content:
            attributes["gen_ai.input.messages"] = messages_json(request.messages)
        span = self._recorder.start_child(f"chat {request.model}", self.span, SpanKind.CLIENT)
        span.attributes = attributes
        return ModelCallTrace(span, self.capture_content)

    def approval_requested(self, call: ToolCallPart) -> None:
        """The run pauses for a human to approve ``call``: an event on the run's span."""
        if self._recording:
            self.span.add_event(
                "chatgate.approval.requested", {"gen_ai.tool.name": call.name, "gen_ai.tool.call.id": call.tool_call_id}
            )

    def approval(self, call: ToolCallPart) -> ToolTrace:
        """The ``approval {tool}`` span: a client's answer claimed, then the tool run (a child) or denied."""
        if not self._recording:
            return ToolTrace(self.span, False, recording=False)
        attributes: dict[str, Any] = {"gen_ai.tool.name": call.name, "gen_ai.tool.call.id": call.tool_call_id}
        span = self._recorder.start_child(f"approval {call.name}", self.span)
        span.attributes = attributes
        return ToolTrace(span, False)

    def tool_call(
        self, call: ToolCallPart, within: ToolTrace | None = None, kind: Mapping[str, str] | None = None
    ) -> ToolTrace:
        """The ``execute_tool {tool}`` span of one server tool call (under its approval's span, if any).

        ``kind`` is what the tool says of itself (``Tool.trace_attributes``: its ``gen_ai.tool.type``, and an
        MCP tool's server); ``function`` when not given.
        """
        if not self._recording:
            return ToolTrace(self.span, False, recording=False)
        attributes: dict[str, Any] = {
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.name": call.name,
            "gen_ai.tool.call.id": call.tool_call_id,
            "gen_ai.tool.type": "function",
            **(kind or {}),
        }
        if self.capture_content:
            attributes["gen_ai.tool.call.arguments"] = span_text(call.arguments)
        span = self._recorder.start_child(f"execute_tool {call.name}", within.span if within is not None else self.span)
        span.attributes = attributes
        return ToolTrace(span, self.capture_content)

    def finished(self, reason: str) -> None:
        """The run ended normally with ``reason``."""
        self._settled = True
        self._attributes["chatgate.run.finish_reason"] = reason

    def failed(self, code: str, message: str) -> None:
        """The run ended with the protocol error ``code``/``message`` the client saw."""
        self._settled = True
        self._attributes.update({"error.type": code, "chatgate.error.code": code, "chatgate.error.message": message})
        self.span.status = Status(StatusCode.ERROR, message)

    def refused(self, error: BaseException) -> None:
        """The request was refused (or failed) before its run started; ends the span."""
        if isinstance(error, RequestError):
            self._attributes["http.response.status_code"] = error.status
            self.failed(error.code, error.message)
        elif isinstance(error, Exception):
            self.failed("internal_error", "An internal error occurred.")
        self.end()

    def close(self) -> None:
        """The run is over, however it went: end its span (once), as cancelled if it never said how it ended.

        A run cut off before its ending (its client left, it was stopped, the server shut down) records no
        ending, and one cut off before it began never ran a line of the runner: whoever owns the run calls
        this when it is over, so the span always ends.
        """
        if self._ended:
            return
        if not self._settled:
            self._attributes.update({"error.type": "cancelled", "chatgate.run.finish_reason": "cancelled"})
            self.span.status = Status(StatusCode.ERROR, "the run ended before it finished: cancelled")
        self.end()

    def end(self) -> None:
        """End the run's span (once)."""
        if not self._ended:
            self._ended = True
            self.span.end()


@lru_cache(maxsize=256)
def _prompt_version(template: str) -> str:
    """A prompt's version: the start of its template's SHA-256 (worked out once per template, not per run)."""
    return hashlib.sha256(template.encode()).hexdigest()[:12]


class ModelCallTrace:
    """The ``chat {model}`` span of one model call."""

    __slots__ = ("_recording", "capture_content", "span")

    def __init__(self, span: RecordedSpan, capture_content: bool, *, recording: bool = True) -> None:
        self.span = span
        self.capture_content = capture_content
        self._recording = recording  # False: ``span`` is the unsampled run's, left alone

    def ended(
        self,
        finished: ModelFinished | None,
        usage: Usage | None,
        error: BaseException | None,
        output: AssistantMessage | None = None,
    ) -> None:
        """The call is over: its ending (reason, response id and model), usage, failure and (captured) answer."""
        if not self._recording:
            return
        span = self.span
        attributes = span.attributes
        if finished is not None:
            attributes["gen_ai.response.finish_reasons"] = (finished.reason,)
            if finished.response_id:
                attributes["gen_ai.response.id"] = span_text(finished.response_id)
            if finished.response_model:
                attributes["gen_ai.response.model"] = span_text(finished.response_model)
        if usage is not None:
            attributes["gen_ai.usage.input_tokens"] = usage.input_tokens
            attributes["gen_ai.usage.output_tokens"] = usage.output_tokens
        if output is not None:
            attributes["gen_ai.output.messages"] = messages_json([output])
        if error is not None:
            if isinstance(error, Exception):
                attributes["error.type"] = error_kind(error)
                public = error.public_message if isinstance(error, ProviderError) else "model call failed"
                span.status = Status(StatusCode.ERROR, public)
                span.add_event("exception", {"exception.type": type(error).__name__, "exception.message": str(error)})
            else:
                attributes["error.type"] = "cancelled"
        span.end()


class ToolTrace:
    """The span of one tool call or approval."""

    __slots__ = ("_recording", "capture_content", "span")

    def __init__(self, span: RecordedSpan, capture_content: bool, *, recording: bool = True) -> None:
        self.span = span
        self.capture_content = capture_content
        self._recording = recording  # False: ``span`` is the unsampled run's, left alone

    def ended(self, outcome: ToolResult | ToolDenied | None, label: str = "") -> None:
        """The tool ran (``ToolResult``), was denied, or (approval spans) ``label`` says what happened."""
        if not self._recording:
            return
        attributes = self.span.attributes
        if label:
            attributes["chatgate.approval.outcome"] = label
        if isinstance(outcome, ToolResult):
            if self.capture_content:
                attributes["gen_ai.tool.call.result"] = span_text(outcome.content)
            if outcome.is_error:
                attributes["error.type"] = "tool_error"
                self.span.status = Status(StatusCode.ERROR, "the tool reported an error")
        self.span.end()

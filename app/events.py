"""The run event vocabulary: what providers and the runner produce and every adapter consumes.

Events are small values, never changed once made, deliberately protocol-neutral. Each adapter maps
them onto its wire format and owns every protocol rule (ordering, closing open parts before an error,
one terminal event). They are frozen dataclasses, except the three deltas (``TextDelta``,
``ReasoningDelta``, ``ToolCallDelta``): one of those is made per token, and a frozen dataclass's
``__init__`` costs nearly three times a plain one's (about 300 ns against 110 ns here), so they are
plain dataclasses with slots, and no code changes them either.

A provider's stream for one model call yields content events, optionally ``Usage``, and ends with
``ModelFinished``. The runner wraps each model call in ``StepStarted``/``StepFinished``, withdraws what
a step showed with ``StepRetracted`` (its model failed mid-answer and the step starts again), and ends every
run with exactly one of ``RunFinished`` or ``RunFailed``, each carrying the run's summed usage
(``ModelUsage``, one per model, summed by a ``UsageTally``: the one place both protocols' usage comes from).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, TypeAlias

__all__ = [
    "FinishReason",
    "ModelFinished",
    "ModelUsage",
    "ReasoningDelta",
    "ReasoningEnd",
    "ReasoningStart",
    "RunEvent",
    "RunFailed",
    "RunFinished",
    "SourceCited",
    "StepFinished",
    "StepRetracted",
    "StepStarted",
    "TextDelta",
    "TextEnd",
    "TextStart",
    "ToolApprovalRequested",
    "ToolCallDelta",
    "ToolCallEnd",
    "ToolCallStart",
    "ToolDenied",
    "ToolResult",
    "Usage",
    "UsageTally",
]

FinishReason: TypeAlias = Literal["stop", "length", "tool_calls", "content_filter", "error", "other"]


@dataclass(frozen=True, slots=True)
class TextStart:
    """A text span of the assistant's answer opens."""

    id: str


@dataclass(slots=True)
class TextDelta:
    """More text for an open text span."""

    id: str
    delta: str


@dataclass(frozen=True, slots=True)
class TextEnd:
    """A text span closes."""

    id: str


@dataclass(frozen=True, slots=True)
class ReasoningStart:
    """A reasoning span opens."""

    id: str


@dataclass(slots=True)
class ReasoningDelta:
    """More reasoning text for an open span."""

    id: str
    delta: str


@dataclass(frozen=True, slots=True)
class ReasoningEnd:
    """A reasoning span closes; ``provider_data`` carries what must be echoed back next turn."""

    id: str
    provider_data: Mapping[str, Any] | None = None


@dataclass(frozen=True, slots=True)
class ToolCallStart:
    """The model starts a tool call."""

    tool_call_id: str
    name: str


@dataclass(slots=True)
class ToolCallDelta:
    """A fragment of a tool call's JSON arguments."""

    tool_call_id: str
    delta: str


@dataclass(frozen=True, slots=True)
class ToolCallEnd:
    """A tool call is complete; ``arguments`` is its whole JSON text."""

    tool_call_id: str
    arguments: str
    provider_data: Mapping[str, Any] | None = None


@dataclass(frozen=True, slots=True)
class ToolResult:
    """The result of a tool call the server ran: ``content`` for the model, ``output`` the data it returned.

    ``images`` are ``(media type, base64 data)`` pairs the tool returned (an MCP tool's image blocks), which
    the next model call sees as images where its provider takes them. They live only in the run: neither
    the journal nor an approval's recorded outcome keeps them.
    """

    tool_call_id: str
    content: str
    is_error: bool = False
    output: Any = None
    images: tuple[tuple[str, str], ...] = field(default=(), repr=False, metadata={"journal": False})


@dataclass(frozen=True, slots=True)
class ToolApprovalRequested:
    """A server tool call waits for a human: the run ends, and the client answers with ``approval_id``."""

    tool_call_id: str
    tool_name: str
    approval_id: str


@dataclass(frozen=True, slots=True)
class ToolDenied:
    """A human denied a tool call; the model is told so and the tool never ran."""

    tool_call_id: str
    reason: str = ""


@dataclass(frozen=True, slots=True)
class SourceCited:
    """The answer cites a source: a web page (``url`` set) or a document the request gave the model.

    ``source_id`` is unique within the run; ``media_type`` is a document's (a page's is None). A provider
    reports each source once per model call, however many passages of it the answer cites.
    """

    source_id: str
    url: str | None = None
    title: str | None = None
    media_type: str | None = None
    filename: str | None = None


@dataclass(frozen=True, slots=True)
class Usage:
    """Token counts for one model call, as its provider reported them.

    ``input_tokens`` include cached ones (read from and written to the prompt cache) and
    ``output_tokens`` reasoning ones; a count the provider did not report is None. A provider that
    reports no usage at all yields no ``Usage``.
    """

    input_tokens: int
    output_tokens: int
    reasoning_tokens: int | None = None
    cached_input_tokens: int | None = None
    cache_write_input_tokens: int | None = None


def _plus(total: int | None, more: int | None) -> int | None:
    if more is None:
        return total
    return more if total is None else total + more


@dataclass(frozen=True, slots=True)
class ModelUsage:
    """One model's token counts summed over a run's calls: what the run's ending reports.

    The counts follow ``Usage`` (AG-UI's ``TokenUsage`` accounting): input and output are totals,
    reasoning, cached-input and cache-write tokens are parts of them, None when no call reported them.
    """

    provider: str
    model: str
    input_tokens: int = 0
    output_tokens: int = 0
    reasoning_tokens: int | None = None
    cached_input_tokens: int | None = None
    cache_write_input_tokens: int | None = None

    @property
    def total_tokens(self) -> int:
        """Input plus output tokens."""
        return self.input_tokens + self.output_tokens

    def plus(self, usage: Usage) -> ModelUsage:
        """These counts with one more call's."""
        return ModelUsage(
            self.provider,
            self.model,
            self.input_tokens + max(usage.input_tokens, 0),
            self.output_tokens + max(usage.output_tokens, 0),
            _plus(self.reasoning_tokens, usage.reasoning_tokens),
            _plus(self.cached_input_tokens, usage.cached_input_tokens),
            _plus(self.cache_write_input_tokens, usage.cache_write_input_tokens),
        )


class UsageTally:
    """A run's usage so far, one ``ModelUsage`` per provider and model, in the order they first reported."""

    __slots__ = ("_models",)

    def __init__(self) -> None:
        self._models: dict[tuple[str, str], ModelUsage] = {}

    def add(self, provider: str, model: str, usage: Usage | None) -> None:
        """Add one call's report (None: the provider reported nothing, which adds nothing)."""
        if usage is None:
            return
        key = (provider, model)
        self._models[key] = self._models.get(key, ModelUsage(provider, model)).plus(usage)

    def entries(self) -> tuple[ModelUsage, ...]:
        """What was reported, per model; empty when no call reported anything."""
        return tuple(self._models.values())


@dataclass(frozen=True, slots=True)
class ModelFinished:
    """A provider's last event for one model call, with the response's id and model when the API names them.

    The runner keeps it (for traces) and never passes it on.
    """

    reason: FinishReason
    # Not compared: two endings with the same reason are the same ending, whatever the upstream called them.
    response_id: str = field(default="", compare=False)
    response_model: str = field(default="", compare=False)


@dataclass(frozen=True, slots=True)
class StepStarted:
    """The runner starts one model call."""

    name: str


@dataclass(frozen=True, slots=True)
class StepFinished:
    """One model call is over."""

    name: str
    reason: FinishReason


@dataclass(frozen=True, slots=True)
class StepRetracted:
    """The client must drop everything the step ``name`` showed so far: the one way to take output back.

    The step is still open: what follows replaces what was dropped, inside the same step (no second
    ``StepStarted``). ``reason`` says why in the product's words (``failover``; a guardrail or a regenerate
    can use the same event), ``model`` names the model (``provider:model``) whose output is withdrawn and
    ``failure`` its failure's kind (``interrupted``, ``timeout``...), kept in the stored answer's metadata.
    ``kept`` is what the run added to the history before this step (earlier steps' assistant and tool
    messages, ``chatgate.history`` messages), for a protocol that restates the whole list (AG-UI's
    ``MESSAGES_SNAPSHOT``); the journal does not keep it (a recovery needs only the drop).
    """

    name: str
    reason: str
    model: str = ""
    failure: str = ""
    # history's Message: events sits on the floor below history's users and cannot name the type.
    kept: tuple[Any, ...] = field(default=(), repr=False, compare=False, metadata={"journal": False})


@dataclass(frozen=True, slots=True)
class RunFinished:
    """The run ended normally. Terminal. ``stopped``: someone stopped it (``POST .../threads/{id}/stop``).

    ``cost_usd`` is what the run's model calls cost, when usage is recorded and the model has a price;
    ``usage`` what they reported. ``pending_tool_call_ids``: the frontend tool calls the run ended
    waiting on (their results come with the client's next request). ``prompt_version``, ``prompt_hash``
    and ``variant`` name the system prompt the run answered under (docs/prompts.md), None without one;
    ``run_id`` is the run's, as its usage row names it (feedback on a stateless run names it).
    """

    reason: FinishReason
    stopped: bool = False
    cost_usd: float | None = None
    usage: tuple[ModelUsage, ...] = ()
    pending_tool_call_ids: tuple[str, ...] = ()
    prompt_version: str | None = None
    prompt_hash: str | None = None
    variant: str | None = None
    run_id: str | None = field(default=None, compare=False)  # who ran it, not how it ended

    def prompt_metadata(self) -> dict[str, str]:
        """``{"promptVersion", "promptHash", "variant"}`` as far as the run had them: the streams' metadata."""
        fields = (("promptVersion", self.prompt_version), ("promptHash", self.prompt_hash), ("variant", self.variant))
        return {key: value for key, value in fields if value is not None}


@dataclass(frozen=True, slots=True)
class RunFailed:
    """The run failed. Terminal. ``message`` is safe to show a client; the detail went to the log.

    ``interrupted``: the upstream broke off mid-answer (what it said so far is kept); ``usage`` what the
    run's model calls reported before the failure.
    """

    message: str
    code: str = "run_failed"
    usage: tuple[ModelUsage, ...] = ()
    interrupted: bool = False


RunEvent: TypeAlias = (
    TextStart
    | TextDelta
    | TextEnd
    | ReasoningStart
    | ReasoningDelta
    | ReasoningEnd
    | ToolCallStart
    | ToolCallDelta
    | ToolCallEnd
    | ToolResult
    | ToolApprovalRequested
    | ToolDenied
    | SourceCited
    | Usage
    | ModelFinished
    | StepStarted
    | StepFinished
    | StepRetracted
    | RunFinished
    | RunFailed
)

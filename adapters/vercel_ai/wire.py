"""The useChat request body as pydantic models (AI SDK ``DefaultChatTransport``, ``ai`` 5.x to 7.x).

Mirrors the ``UIMessage`` shapes of ``validateUIMessages`` in ai 5.0, 6.0 and 7.0. Unknown fields are
ignored and unknown part types are kept as ``OtherUIPart``, so newer clients are not refused; only
what chatgate reads is checked. Errors name the wire field (``messages.0.parts.1.toolCallId``).
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Discriminator, Field, Tag, TypeAdapter, model_validator

from chatgate.ids import ClientId, ClientThreadId

__all__ = [
    "DENIED",
    "METADATA_KEY",
    "NEWEST",
    "REQUEST",
    "ChatRequest",
    "FileUIPart",
    "OtherUIPart",
    "ReasoningUIPart",
    "StepStartUIPart",
    "TextUIPart",
    "ToolApproval",
    "ToolUIPart",
    "UIMessage",
    "UIPart",
]

METADATA_KEY = "chatgate"
"""Our key in ``providerMetadata`` (and ``callProviderMetadata``): what a provider needs echoed back."""
DENIED = "The user denied this tool call."
"""A denied tool call's text, as the model reads it."""

ToolState = Literal[
    "input-streaming",
    "input-available",
    "approval-requested",
    "approval-responded",
    "output-available",
    "output-error",
    "output-denied",
]


class _Wire(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True)


class TextUIPart(_Wire):
    """``{type: "text", text}``."""

    type: Literal["text"]
    text: str


class ReasoningUIPart(_Wire):
    """``{type: "reasoning", text, providerMetadata?}``."""

    type: Literal["reasoning"]
    text: str
    providerMetadata: dict[str, Any] | None = None


class FileUIPart(_Wire):
    """``{type: "file", mediaType, url, filename?}``; ``url`` may be a ``data:`` URL."""

    type: Literal["file"]
    mediaType: str
    url: str
    filename: str | None = None


class StepStartUIPart(_Wire):
    """``{type: "step-start"}``: where one model call of a multi-step answer begins."""

    type: Literal["step-start"]


class ToolApproval(_Wire):
    """A tool part's ``approval``: requested (``id``) or answered (``approved``, ``reason?``)."""

    id: ClientId
    approved: bool | None = None
    reason: str | None = None


class ToolUIPart(_Wire):
    """``tool-NAME`` or ``dynamic-tool`` (with ``toolName``), in any of its states."""

    type: str
    toolCallId: ClientId
    state: ToolState
    toolName: str | None = None
    input: Any = None
    output: Any = None
    errorText: str | None = None
    approval: ToolApproval | None = None
    callProviderMetadata: dict[str, Any] | None = None

    @model_validator(mode="after")
    def _complete(self) -> ToolUIPart:
        if self.type == "dynamic-tool" and not self.toolName:
            raise ValueError("a dynamic-tool part needs toolName")
        if self.type != "dynamic-tool" and len(self.type) <= len("tool-"):
            raise ValueError("a tool part's type must name the tool: tool-NAME")
        if self.state == "approval-responded" and (self.approval is None or self.approval.approved is None):
            raise ValueError("an approval-responded tool part needs approval.id and approval.approved")
        return self

    @property
    def name(self) -> str:
        """The tool's name: ``toolName`` for dynamic tools, else the type after ``tool-``."""
        if self.type == "dynamic-tool":
            return self.toolName or ""
        return self.type[len("tool-") :]


class OtherUIPart(_Wire):
    """Parts the model never sees: ``source-url``, ``source-document``, ``data-*`` and newer types."""

    type: str


def _part_kind(value: Any) -> str | None:
    kind = value.get("type") if isinstance(value, dict) else getattr(value, "type", None)
    if not isinstance(kind, str):
        return None
    if kind in ("text", "reasoning", "file", "step-start"):
        return kind
    if kind == "dynamic-tool" or kind.startswith("tool-"):
        return "tool"
    return "other"


UIPart = Annotated[
    Annotated[TextUIPart, Tag("text")]
    | Annotated[ReasoningUIPart, Tag("reasoning")]
    | Annotated[FileUIPart, Tag("file")]
    | Annotated[StepStartUIPart, Tag("step-start")]
    | Annotated[ToolUIPart, Tag("tool")]
    | Annotated[OtherUIPart, Tag("other")],
    Discriminator(_part_kind, custom_error_type="part_type", custom_error_message="each part needs a string type"),
]


class UIMessage(_Wire):
    """``{id, role, parts, metadata?}``."""

    id: ClientId = ""
    role: Literal["system", "user", "assistant"]
    parts: list[UIPart]


class ChatRequest(BaseModel):
    """``{...extra fields, id, messages, trigger, messageId?}``; ``message`` is the newest-only form."""

    model_config = ConfigDict(extra="allow", frozen=True)

    id: ClientThreadId = ""
    messages: list[UIMessage] | None = Field(default=None, min_length=1)
    trigger: Literal["submit-message", "regenerate-message"] = "submit-message"
    messageId: ClientId | None = None
    message: Any = None


REQUEST: TypeAdapter[ChatRequest] = TypeAdapter(ChatRequest)
"""Validates a useChat request body."""

NEWEST: TypeAdapter[UIMessage] = TypeAdapter(UIMessage)
"""Validates the newest-only ``message`` of a useChat request."""

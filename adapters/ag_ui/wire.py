"""AG-UI request wire types: ``RunAgentInput`` as pydantic models.

Mirrors the 1.0 schemas of npm ``@ag-ui/core`` 1.0.0 (``dist/schemas.mjs``), read for facts. Keys are
camelCase on the wire and unknown keys are ignored, so newer clients still get through. A message
whose role this server does not model (a role from a newer protocol) validates as ``SkippedMessage``
instead of failing the request. The pre-1.0 ``binary`` content part is accepted too,
because older clients still send it.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Discriminator, Field, Tag, TypeAdapter, model_validator
from pydantic.alias_generators import to_camel

from chatgate.ids import ClientId, ClientThreadId

__all__ = [
    "ActivityMessage",
    "AssistantMessage",
    "BinaryPart",
    "ContentPart",
    "Context",
    "DataSource",
    "FileSource",
    "MediaPart",
    "ReasoningMessage",
    "ResumeEntry",
    "RunAgentInput",
    "SkippedMessage",
    "SystemMessage",
    "TextContent",
    "Tool",
    "ToolCall",
    "ToolMessage",
    "UrlSource",
    "UserMessage",
    "WireMessage",
    "run_agent_input",
]


class _Wire(BaseModel):
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="ignore", frozen=True)


class TextContent(_Wire):
    """``{type: "text", text}``."""

    type: Literal["text"]
    text: str


class DataSource(_Wire):
    """Bytes carried inline, base64 in ``value``."""

    type: Literal["data"]
    value: str
    mime_type: str


class UrlSource(_Wire):
    """Bytes referenced by URL."""

    type: Literal["url"]
    value: str
    mime_type: str | None = None


class FileSource(_Wire):
    """A handle only the provider that issued it can resolve."""

    type: Literal["file"]
    value: str
    provider: str | None = None
    mime_type: str | None = None


class MediaPart(_Wire):
    """An image, audio, video or document part with its source."""

    type: Literal["image", "audio", "video", "document"]
    source: Annotated[DataSource | UrlSource | FileSource, Field(discriminator="type")]


class BinaryPart(_Wire):
    """The pre-1.0 ``binary`` part: a MIME type and one of ``data`` (base64), ``url`` or ``id``."""

    type: Literal["binary"]
    mime_type: str
    id: str | None = None
    url: str | None = None
    data: str | None = None
    filename: str | None = None

    @model_validator(mode="after")
    def _has_bytes(self) -> BinaryPart:
        if self.data is None and self.url is None and self.id is None:
            raise ValueError("a binary part needs one of data, url or id")
        return self


ContentPart = Annotated[TextContent | MediaPart | BinaryPart, Field(discriminator="type")]


class SystemMessage(_Wire):
    """A ``system`` or ``developer`` message."""

    id: ClientId
    role: Literal["system", "developer"]
    content: str


class UserMessage(_Wire):
    """A ``user`` message: a string or a list of content parts."""

    id: ClientId
    role: Literal["user"]
    content: str | list[ContentPart]


class FunctionCall(_Wire):
    """A tool call's name and JSON arguments text."""

    name: str
    arguments: str


class ToolCall(_Wire):
    """One call an assistant message made."""

    id: ClientId
    type: Literal["function"] = "function"
    function: FunctionCall
    encrypted_value: str | None = None


class AssistantMessage(_Wire):
    """An ``assistant`` message: optional text and tool calls."""

    id: ClientId
    role: Literal["assistant"]
    content: str | None = None
    tool_calls: list[ToolCall] | None = None


class ToolMessage(_Wire):
    """A ``tool`` message: what a tool returned, or ``error``."""

    id: ClientId
    role: Literal["tool"]
    content: str | list[ContentPart]
    tool_call_id: ClientId
    error: str | None = None


class ReasoningMessage(_Wire):
    """A ``reasoning`` message; ``encryptedValue`` is what the provider needs echoed back."""

    id: ClientId
    role: Literal["reasoning"]
    content: str
    encrypted_value: str | None = None


class ActivityMessage(_Wire):
    """An ``activity`` message: the frontend's structured UI state, kept in the thread, never the model's."""

    id: ClientId
    role: Literal["activity"]
    activity_type: str
    content: dict[str, Any]


class SkippedMessage(_Wire):
    """A message this server does not model (a role from a newer protocol)."""

    role: str
    id: ClientId = ""


_MODELLED_ROLES = {"system", "developer", "user", "assistant", "tool", "reasoning", "activity"}


def _message_tag(value: Any) -> str | None:
    role = value.get("role") if isinstance(value, dict) else getattr(value, "role", None)
    if not isinstance(role, str):
        return None
    if role == "developer":
        return "system"
    return role if role in _MODELLED_ROLES else "skipped"


WireMessage = Annotated[
    Annotated[SystemMessage, Tag("system")]
    | Annotated[UserMessage, Tag("user")]
    | Annotated[AssistantMessage, Tag("assistant")]
    | Annotated[ToolMessage, Tag("tool")]
    | Annotated[ReasoningMessage, Tag("reasoning")]
    | Annotated[ActivityMessage, Tag("activity")]
    | Annotated[SkippedMessage, Tag("skipped")],
    Discriminator(
        _message_tag,
        custom_error_type="invalid_message",
        custom_error_message="each message needs a string role",
    ),
]


class Tool(_Wire):
    """A tool the client executes."""

    name: str
    description: str = ""
    parameters: dict[str, Any] | None = None


class Context(_Wire):
    """A named piece of ambient information for the run."""

    description: str
    value: str


class ResumeEntry(_Wire):
    """An answer to one interrupt of the previous run."""

    interrupt_id: ClientId
    status: Literal["resolved", "cancelled"]
    payload: Any = None


class RunAgentInput(_Wire):
    """The request body of an AG-UI run."""

    thread_id: ClientThreadId
    run_id: ClientId
    parent_run_id: ClientId | None = None
    protocol_version: str | None = None
    messages: list[WireMessage]
    tools: list[Tool] = Field(default_factory=list)
    context: list[Context] = Field(default_factory=list)
    forwarded_props: Any = None
    resume: list[ResumeEntry] = Field(default_factory=list)


run_agent_input: TypeAdapter[RunAgentInput] = TypeAdapter(RunAgentInput)
"""Validates a request body (see ``chatgate.adapters.base.decode_body``)."""

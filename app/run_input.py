"""``RunInput``: one decoded request, the same for every UI protocol."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from chatgate.history import Message

__all__ = ["ApprovalResponse", "RunInput", "ToolDefinition"]


@dataclass(frozen=True, slots=True)
class ToolDefinition:
    """A tool offered to the model: its name, description and JSON Schema for its arguments."""

    name: str
    description: str = ""
    parameters: Mapping[str, Any] = field(default_factory=lambda: {"type": "object", "properties": {}})


@dataclass(frozen=True, slots=True)
class ApprovalResponse:
    """A human's answer to a ``ToolApprovalRequested``: honoured only if ``approval_id`` verifies.

    ``tool_call_id`` is set when the protocol names the call (useChat); AG-UI names only the approval.
    """

    approval_id: str
    approved: bool
    reason: str = ""
    tool_call_id: str | None = None


@dataclass(frozen=True, slots=True)
class RunInput:
    """What a UI client asked for: the history as sent, client-side tools and request facts.

    ``thread_id`` is the conversation (AG-UI ``threadId``, useChat chat ``id``); ``run_id`` names
    this run, ``parent_run_id`` the run it continues or branches from, when the client named one
    (AG-UI ``parentRunId``; run ids are the client's, so chatgate never invents one);
    ``protocol_version`` the protocol version the client declared (AG-UI ``protocolVersion``). ``variables``
    are request-scoped values a client sent (AG-UI context and forwarded props, extra useChat body
    fields); only operator-allowed ones are ever used. ``approvals`` are
    answers to tool approval requests; ``continue_message_id`` is the assistant message a useChat
    client asks to continue (after a tool output or an approval) instead of starting a new one.

    For server-held threads (docs/conversations.md): ``newest_only`` marks a body that sent only its
    newest message, ``regenerate`` a request to answer the last user turn again, and ``snapshot``
    the stored history a protocol should send the client before the run's own events.
    """

    messages: tuple[Message, ...]
    thread_id: str = ""
    run_id: str = ""
    parent_run_id: str | None = None
    protocol_version: str | None = None
    tools: tuple[ToolDefinition, ...] = ()
    variables: Mapping[str, Any] = field(default_factory=dict)
    approvals: tuple[ApprovalResponse, ...] = ()
    continue_message_id: str | None = None
    newest_only: bool = False
    regenerate: bool = False
    snapshot: tuple[Message, ...] | None = None

"""useChat requests: a ``DefaultChatTransport`` body decoded into a ``RunInput``.

The chat ``id`` is the thread; extra
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
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic_core import to_json

from chatgate.adapters.base import decode_body
from chatgate.adapters.vercel_ai.wire import (
    DENIED,
    METADATA_KEY,
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
from chatgate.errors import RequestError
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

__all__ = ["decode_request"]


def decode_request(body: bytes) -> RunInput:
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

import json
import logging
from typing import Any

import pytest

from chatgate.adapters.ag_ui import protocol
from chatgate.errors import RequestError
from chatgate.history import (
    ActivityMessage,
    AssistantMessage,
    FilePart,
    ReasoningPart,
    SystemMessage,
    TextPart,
    ToolCallPart,
    ToolMessage,
    UserMessage,
)
from chatgate.run_input import ApprovalResponse, RunInput, ToolDefinition


def decode(messages: list[dict[str, Any]], **extra: Any) -> RunInput:
    return protocol.decode(json.dumps({"threadId": "t1", "runId": "r1", "messages": messages, **extra}).encode())


def refused(body: bytes) -> RequestError:
    with pytest.raises(RequestError) as caught:
        protocol.decode(body)
    return caught.value


def test_thread_and_run_ids_are_kept() -> None:
    run_input = decode([])
    assert (run_input.thread_id, run_input.run_id, run_input.messages) == ("t1", "r1", ())


def test_system_and_developer_become_system_messages_keeping_the_role() -> None:
    run_input = decode(
        [{"id": "s", "role": "system", "content": "Be kind."}, {"id": "d", "role": "developer", "content": "Be brief."}]
    )
    assert run_input.messages == (
        SystemMessage("Be kind.", id="s", role="system"),
        SystemMessage("Be brief.", id="d", role="developer"),
    )


def test_user_string_content_is_one_text_part() -> None:
    assert decode([{"id": "u", "role": "user", "content": "hello"}]).messages == (
        UserMessage((TextPart("hello"),), id="u"),
    )


def test_user_content_parts_become_text_and_file_parts() -> None:
    parts = [
        {"type": "text", "text": "look"},
        {"type": "image", "source": {"type": "data", "value": "iVBO", "mimeType": "image/png"}},
        {"type": "audio", "source": {"type": "url", "value": "https://x.test/a.mp3", "mimeType": "audio/mpeg"}},
        {"type": "video", "source": {"type": "url", "value": "https://x.test/v"}},
        {"type": "document", "source": {"type": "url", "value": "https://x.test/d"}},
    ]
    (message,) = decode([{"id": "u", "role": "user", "content": parts}]).messages
    assert message == UserMessage(
        (
            TextPart("look"),
            FilePart("image/png", "data:image/png;base64,iVBO"),
            FilePart("audio/mpeg", "https://x.test/a.mp3"),
            FilePart("video/*", "https://x.test/v"),
            FilePart("application/octet-stream", "https://x.test/d"),
        ),
        id="u",
    )


def test_a_provider_file_handle_is_dropped() -> None:
    parts = [{"type": "text", "text": "see"}, {"type": "document", "source": {"type": "file", "value": "file-abc"}}]
    (message,) = decode([{"id": "u", "role": "user", "content": parts}]).messages
    assert message == UserMessage((TextPart("see"),), id="u")


def test_legacy_binary_parts_become_file_parts() -> None:
    parts = [
        {"type": "binary", "mimeType": "image/jpeg", "data": "/9j/", "filename": "cat.jpg"},
        {"type": "binary", "mimeType": "application/pdf", "url": "https://x.test/p.pdf"},
        {"type": "binary", "mimeType": "application/pdf", "id": "file-1"},
    ]
    (message,) = decode([{"id": "u", "role": "user", "content": parts}]).messages
    assert message == UserMessage(
        (
            FilePart("image/jpeg", "data:image/jpeg;base64,/9j/", "cat.jpg"),
            FilePart("application/pdf", "https://x.test/p.pdf"),
        ),
        id="u",
    )


def test_assistant_text_and_tool_calls_become_parts_in_order() -> None:
    call = {"id": "c1", "type": "function", "function": {"name": "weather", "arguments": '{"city":"Oslo"}'}}
    (message,) = decode([{"id": "a", "role": "assistant", "content": "Checking.", "toolCalls": [call]}]).messages
    assert message == AssistantMessage(
        (TextPart("Checking."), ToolCallPart("c1", "weather", '{"city":"Oslo"}')), id="a"
    )


def test_assistant_with_only_tool_calls_has_no_text_part() -> None:
    call = {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}
    (message,) = decode([{"id": "a", "role": "assistant", "toolCalls": [call]}]).messages
    assert message == AssistantMessage((ToolCallPart("c1", "f", "{}"),), id="a")


def test_tool_call_encrypted_value_becomes_provider_data() -> None:
    call = {
        "id": "c1",
        "type": "function",
        "function": {"name": "f", "arguments": "{}"},
        "encryptedValue": '{"upstream_id":"toolu_1"}',
    }
    (message,) = decode([{"id": "a", "role": "assistant", "toolCalls": [call]}]).messages
    assert isinstance(message, AssistantMessage)
    assert message.tool_calls[0].provider_data == {"upstream_id": "toolu_1"}


def test_tool_message_becomes_a_tool_result() -> None:
    (message,) = decode([{"id": "t", "role": "tool", "toolCallId": "c1", "content": "12 C"}]).messages
    assert message == ToolMessage("c1", "12 C", id="t")


def test_tool_error_marks_the_result_failed() -> None:
    (message,) = decode([{"id": "t", "role": "tool", "toolCallId": "c1", "content": "", "error": "timed out"}]).messages
    assert message == ToolMessage("c1", "timed out", is_error=True, id="t", metadata={"error": "timed out"})


def test_tool_content_parts_keep_their_text() -> None:
    content = [{"type": "text", "text": "a"}, {"type": "image", "source": {"type": "url", "value": "u"}}]
    (message,) = decode([{"id": "t", "role": "tool", "toolCallId": "c1", "content": content}]).messages
    assert message == ToolMessage("c1", "a", id="t")


def test_reasoning_becomes_an_assistant_message_with_a_reasoning_part() -> None:
    (message,) = decode([{"id": "r", "role": "reasoning", "content": "Hmm."}]).messages
    assert message == AssistantMessage((ReasoningPart("Hmm."),), id="r")


def test_reasoning_encrypted_value_sent_by_chatgate_is_restored() -> None:
    encrypted = '{"signature":"sig-1"}'
    (message,) = decode([{"id": "r", "role": "reasoning", "content": "Hmm.", "encryptedValue": encrypted}]).messages
    assert message == AssistantMessage((ReasoningPart("Hmm.", {"signature": "sig-1"}),), id="r")


def test_an_opaque_encrypted_value_is_kept_whole() -> None:
    (message,) = decode([{"id": "r", "role": "reasoning", "content": "", "encryptedValue": "gAAAA=="}]).messages
    assert message == AssistantMessage((ReasoningPart("", {"encrypted_value": "gAAAA=="}),), id="r")


def test_activity_is_kept_and_unknown_roles_are_skipped_and_logged(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="chatgate.adapters.ag_ui")
    run_input = decode(
        [
            {"id": "x", "role": "activity", "activityType": "plan", "content": {"steps": []}},
            {"id": "y", "role": "hologram", "content": 3},
            {"id": "u", "role": "user", "content": "hi"},
        ]
    )
    assert run_input.messages == (
        ActivityMessage("plan", {"steps": []}, id="x"),
        UserMessage((TextPart("hi"),), id="u"),
    )
    assert "skipped 1 message(s) with role(s) ['hologram']" in caplog.text


def test_an_activity_without_its_type_or_content_is_a_422_naming_the_field() -> None:
    with pytest.raises(RequestError) as refused:
        decode([{"id": "x", "role": "activity", "content": {}}])
    assert refused.value.status == 422 and "messages.0" in str(refused.value.details)


def test_parent_run_id_is_kept_for_run_started() -> None:
    assert decode([], parentRunId="run-0").parent_run_id == "run-0"
    assert decode([]).parent_run_id is None


def test_unknown_fields_are_ignored() -> None:
    run_input = decode(
        [{"id": "u", "role": "user", "content": "hi", "metadata": {"k": 1}, "futureField": True}],
        protocolVersion="1.0",
        state={"count": 1},
        parentRunId="r0",
    )
    assert run_input.messages == (UserMessage((TextPart("hi"),), id="u"),)


def test_tools_become_tool_definitions() -> None:
    schema = {"type": "object", "properties": {"city": {"type": "string"}}}
    run_input = decode(
        [],
        tools=[
            {"name": "weather", "description": "Weather now", "parameters": schema},
            {"name": "ping", "description": ""},
        ],
    )
    assert run_input.tools == (ToolDefinition("weather", "Weather now", schema), ToolDefinition("ping", ""))


def test_context_and_forwarded_props_become_variables() -> None:
    run_input = decode(
        [],
        context=[{"description": "user_name", "value": "Ann"}, {"description": "page", "value": "/home"}],
        forwardedProps={"page": "/settings", "instructions": "Be terse."},
    )
    assert run_input.variables == {"user_name": "Ann", "page": "/settings", "instructions": "Be terse."}


def test_forwarded_props_that_are_not_an_object_add_no_variables() -> None:
    assert decode([], forwardedProps=["a"]).variables == {}


def test_resume_entries_become_approval_responses() -> None:
    run_input = decode(
        [],
        resume=[
            {"interruptId": "i1", "status": "resolved"},
            {"interruptId": "i2", "status": "resolved", "payload": {"approved": False, "reason": "too risky"}},
            {"interruptId": "i3", "status": "cancelled"},
        ],
    )
    assert run_input.approvals == (
        ApprovalResponse("i1", True),
        ApprovalResponse("i2", False, "too risky"),
        ApprovalResponse("i3", False),
    )


def test_a_body_that_is_not_json_is_a_400() -> None:
    error = refused(b"{not json")
    assert (error.status, error.code) == (400, "invalid_json")


@pytest.mark.parametrize("missing", ["threadId", "runId", "messages"])
def test_a_missing_required_field_is_a_422_naming_it(missing: str) -> None:
    body = {"threadId": "t", "runId": "r", "messages": []}
    del body[missing]
    error = refused(json.dumps(body).encode())
    assert (error.status, error.code) == (422, "invalid_request")
    assert error.details == [{"field": missing, "problem": "Field required"}]


def test_a_message_without_a_role_is_a_422_naming_it() -> None:
    error = refused(b'{"threadId": "t", "runId": "r", "messages": [{"id": "m", "content": "hi"}]}')
    assert error.status == 422
    assert [d["field"] for d in error.details] == ["messages.0"]


def test_a_wrongly_typed_field_is_a_422_naming_it() -> None:
    error = refused(b'{"threadId": "t", "runId": "r", "messages": [{"id": "s", "role": "system", "content": 5}]}')
    assert error.status == 422
    assert [d["field"] for d in error.details] == ["messages.0.system.content"]


def test_a_binary_part_without_bytes_is_a_422() -> None:
    body = {
        "threadId": "t",
        "runId": "r",
        "messages": [{"id": "u", "role": "user", "content": [{"type": "binary", "mimeType": "image/png"}]}],
    }
    error = refused(json.dumps(body).encode())
    assert error.status == 422
    assert "a binary part needs one of data, url or id" in error.message


def test_a_url_source_without_a_mime_type_gets_the_one_its_extension_names() -> None:
    content = [
        {"type": "image", "source": {"type": "url", "value": "https://x.test/cat.png?size=2"}},
        {"type": "document", "source": {"type": "url", "value": "https://x.test/report.pdf"}},
        {"type": "image", "source": {"type": "url", "value": "https://x.test/not-an-image.pdf"}},
    ]
    (message,) = decode([{"id": "u1", "role": "user", "content": content}]).messages
    assert isinstance(message, UserMessage)
    assert [part.media_type for part in message.parts if isinstance(part, FilePart)] == [
        "image/png",
        "application/pdf",
        "image/*",
    ]

import json
from typing import Any

import pytest

from chatgate.adapters.vercel_ai import protocol
from chatgate.errors import RequestError
from chatgate.history import (
    AssistantMessage,
    FilePart,
    ReasoningPart,
    SystemMessage,
    TextPart,
    ToolCallPart,
    ToolMessage,
    UserMessage,
)
from chatgate.run_input import ApprovalResponse, RunInput


def decode(messages: list[dict[str, Any]], **body: Any) -> RunInput:
    return protocol.decode(json.dumps({"id": "chat-1", "messages": messages, **body}).encode())


def refused(body: bytes) -> RequestError:
    with pytest.raises(RequestError) as caught:
        protocol.decode(body)
    return caught.value


def fields(error: RequestError) -> list[str]:
    return [detail["field"] for detail in error.details]


def user(text: str, id: str = "u1") -> dict[str, Any]:
    return {"id": id, "role": "user", "parts": [{"type": "text", "text": text}]}


def assistant(*parts: dict[str, Any], id: str = "a1") -> dict[str, Any]:
    return {"id": id, "role": "assistant", "parts": list(parts)}


def tool(state: str, **fields: Any) -> dict[str, Any]:
    return {"type": "tool-add", "toolCallId": "c1", "state": state, "input": {"a": 1}, **fields}


def test_a_submit_becomes_a_run_input() -> None:
    run = decode([user("Hi")], trigger="submit-message")
    assert run.messages == (UserMessage((TextPart("Hi"),), id="u1"),)
    assert run.thread_id == "chat-1"
    assert run.run_id.startswith("run_")
    assert run.continue_message_id is None


def test_a_regenerate_answers_the_history_as_sent() -> None:
    run = decode(
        [user("Hi"), assistant({"type": "text", "text": "Hello"}), user("Again", "u2")],
        trigger="regenerate-message",
        messageId="a2",
    )
    assert [type(message).__name__ for message in run.messages] == ["UserMessage", "AssistantMessage", "UserMessage"]
    assert run.continue_message_id is None


def test_extra_body_fields_become_variables() -> None:
    run = decode([user("Hi")], trigger="submit-message", customer="acme", instructions="Be brief.")
    assert run.variables == {"customer": "acme", "instructions": "Be brief."}


def test_a_system_message_is_a_system_message() -> None:
    run = decode([{"id": "s1", "role": "system", "parts": [{"type": "text", "text": "Be a pirate."}]}, user("Hi")])
    assert run.messages[0] == SystemMessage("Be a pirate.", id="s1")


def test_file_parts_keep_media_type_url_and_filename() -> None:
    file = {"type": "file", "mediaType": "image/png", "url": "data:image/png;base64,iVBO", "filename": "a.png"}
    run = decode([{"id": "u1", "role": "user", "parts": [{"type": "text", "text": "See"}, file]}])
    assert run.messages[0] == UserMessage(
        (TextPart("See"), FilePart("image/png", "data:image/png;base64,iVBO", "a.png")), id="u1"
    )


def test_reasoning_keeps_its_provider_metadata() -> None:
    ours = {"type": "reasoning", "text": "Hmm", "providerMetadata": {"chatgate": {"signature": "sig"}}}
    theirs = {"type": "reasoning", "text": "Hm", "providerMetadata": {"anthropic": {"signature": "x"}}}
    run = decode([user("Hi"), assistant(ours, theirs, {"type": "text", "text": "Yes"})])
    assert run.messages[1] == AssistantMessage(
        (
            ReasoningPart("Hmm", provider_data={"signature": "sig"}),
            ReasoningPart("Hm", provider_data={"anthropic": {"signature": "x"}}),
            TextPart("Yes"),
        ),
        id="a1",
    )


def test_ui_only_parts_never_reach_the_model() -> None:
    ui_only = [
        {"type": "step-start"},
        {"type": "source-url", "sourceId": "s1", "url": "https://example.com"},
        {"type": "source-document", "sourceId": "s2", "mediaType": "text/plain", "title": "Doc"},
        {"type": "data-weather", "id": "d1", "data": {"temp": 21}},
        {"type": "custom", "kind": "from-a-newer-client"},
    ]
    run = decode(
        [
            {"id": "u1", "role": "user", "parts": [*ui_only, {"type": "text", "text": "Hi"}]},
            assistant(*ui_only, {"type": "text", "text": "Hello"}),
        ]
    )
    assert run.messages == (UserMessage((TextPart("Hi"),), id="u1"), AssistantMessage((TextPart("Hello"),), id="a1"))


@pytest.mark.parametrize("state", ["input-streaming", "input-available"])
def test_an_unanswered_tool_call_is_a_call_without_a_result(state: str) -> None:
    run = decode([user("Hi"), assistant(tool(state, callProviderMetadata={"chatgate": {"id": "up-1"}}))])
    assert run.messages[1:] == (
        AssistantMessage((ToolCallPart("c1", "add", '{"a":1}', provider_data={"id": "up-1"}),), id="a1"),
    )


@pytest.mark.parametrize(
    ("part", "result"),
    [
        (tool("output-available", output={"sum": 3}), ToolMessage("c1", '{"sum":3}')),
        (tool("output-available", output="3"), ToolMessage("c1", "3")),
        (tool("output-error", errorText="boom"), ToolMessage("c1", "boom", is_error=True)),
        (
            tool("output-denied", approval={"id": "ap1", "approved": False, "reason": "no"}),
            ToolMessage("c1", "The user denied this tool call. Reason: no", is_error=True),
        ),
    ],
)
def test_an_answered_tool_call_is_followed_by_its_result(part: dict[str, Any], result: ToolMessage) -> None:
    run = decode([user("Hi"), assistant(part)])
    assert run.messages[1:] == (AssistantMessage((ToolCallPart("c1", "add", '{"a":1}'),), id="a1"), result)


def test_a_dynamic_tool_is_named_by_tool_name() -> None:
    part = {"type": "dynamic-tool", "toolName": "search", "toolCallId": "c9", "state": "input-available", "input": {}}
    run = decode([user("Hi"), assistant(part)])
    assert run.messages[1] == AssistantMessage((ToolCallPart("c9", "search", "{}"),), id="a1")


def test_an_answered_approval_is_passed_on_and_the_message_continued() -> None:
    part = tool("approval-responded", approval={"id": "tok", "approved": True})
    run = decode([user("Hi"), assistant(part)], messageId="a1")
    assert run.approvals == (ApprovalResponse("tok", True, "", "c1"),)
    assert run.continue_message_id == "a1"
    assert run.messages[1] == AssistantMessage((ToolCallPart("c1", "add", '{"a":1}'),), id="a1")


def test_a_multi_step_answer_is_split_so_results_come_before_the_text_that_follows() -> None:
    parts = [
        {"type": "step-start"},
        {"type": "text", "text": "Let me add."},
        tool("output-available", output="2"),
        {"type": "step-start"},
        {"type": "text", "text": "It is 2."},
    ]
    run = decode([user("Hi"), assistant(*parts)])
    assert run.messages[1:] == (
        AssistantMessage((TextPart("Let me add."), ToolCallPart("c1", "add", '{"a":1}')), id="a1"),
        ToolMessage("c1", "2"),
        AssistantMessage((TextPart("It is 2."),), id="a1:1"),
    )


def test_text_after_a_tool_call_starts_a_new_step_even_without_step_start() -> None:
    run = decode([user("Hi"), assistant(tool("output-available", output="2"), {"type": "text", "text": "2."})])
    assert [type(message).__name__ for message in run.messages[1:]] == [
        "AssistantMessage",
        "ToolMessage",
        "AssistantMessage",
    ]


# --- bad input -----------------------------------------------------------------------------------


def test_invalid_json_is_400() -> None:
    error = refused(b'{"messages": [')
    assert (error.status, error.code) == (400, "invalid_json")


def test_messages_of_the_wrong_type_is_422() -> None:
    error = refused(b'{"id": "c", "messages": {"role": "user"}}')
    assert (error.status, fields(error)) == (422, ["messages"])


def test_missing_messages_is_422() -> None:
    error = refused(b'{"id": "c"}')
    assert (error.status, fields(error)) == (422, ["messages"])


def test_empty_messages_is_422() -> None:
    error = refused(b'{"id": "c", "messages": []}')
    assert (error.status, fields(error)) == (422, ["messages"])


def test_only_the_newest_message_decodes_marked_newest_only() -> None:
    body = b'{"id": "c", "message": {"id": "u1", "role": "user", "parts": [{"type": "text", "text": "hi"}]}}'
    run_input = protocol.decode(body)
    assert run_input.newest_only and run_input.thread_id == "c"
    assert [(m.id, m.text) for m in run_input.messages if isinstance(m, UserMessage)] == [("u1", "hi")]


def test_a_regenerate_is_marked() -> None:
    body = b'{"id": "c", "trigger": "regenerate-message", "messages": [{"id": "u1", "role": "user", "parts": []}]}'
    assert protocol.decode(body).regenerate


def test_an_unknown_role_is_422_naming_it() -> None:
    error = refused(json.dumps({"messages": [{"id": "m", "role": "tool", "parts": []}]}).encode())
    assert (error.status, fields(error)) == (422, ["messages.0.role"])


def test_a_text_part_without_text_is_422_naming_it() -> None:
    error = refused(json.dumps({"messages": [{"id": "m", "role": "user", "parts": [{"type": "text"}]}]}).encode())
    assert (error.status, fields(error)) == (422, ["messages.0.parts.0.text.text"])


def test_a_part_without_a_type_is_422() -> None:
    error = refused(json.dumps({"messages": [{"id": "m", "role": "user", "parts": [{"text": "x"}]}]}).encode())
    assert (error.status, fields(error)) == (422, ["messages.0.parts.0"])


def test_a_tool_part_in_an_unknown_state_is_422_naming_it() -> None:
    body = {"messages": [user("Hi"), assistant(tool("exploded"))]}
    error = refused(json.dumps(body).encode())
    assert (error.status, fields(error)) == (422, ["messages.1.parts.0.tool.state"])


def test_a_dynamic_tool_without_a_name_is_422() -> None:
    part = {"type": "dynamic-tool", "toolCallId": "c1", "state": "input-available", "input": {}}
    error = refused(json.dumps({"messages": [assistant(part)]}).encode())
    assert error.status == 422
    assert "toolName" in error.message


def test_a_wrong_trigger_is_422_naming_it() -> None:
    error = refused(json.dumps({"messages": [user("Hi")], "trigger": "resume"}).encode())
    assert (error.status, fields(error)) == (422, ["trigger"])

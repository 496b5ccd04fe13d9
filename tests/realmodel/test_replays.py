"""Replays add nothing (issue 32), on the real model server: the issue's own reproduction, both protocols.

On a server-held thread the model calls an approval-gated server tool, the person approves, the tool
runs once and the model answers; the same approval sent again (useChat: the message list with the
approval response; AG-UI: the same ``resume``) reaches no model (llama-server logs no new prompt), runs
no tool, stores nothing. The next user turn then goes to a server rendering Gemma 3's strict template,
which refuses two assistant messages in a row, and is answered.

Two instances of the one agent share the store and the approval secret, as replicas do. The one that
asks says ``tool_choice: required`` on the ``calling`` server (the call comes on any CPU:
tests/realmodel/conftest.py). The base model calls the tool again after every result when it may, so
the instance that takes the approval says ``tool_choice: none``: the model then answers in words (it
writes the text it would have called with, which is what a 270M base model has to say).
"""

from __future__ import annotations

import asyncio
import secrets
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.realmodel import tools
from tests.realmodel.conftest import NO_THINKING, forced_call, llama_config
from tests.realmodel.llama import LlamaServer
from tests.threads.replay_flows import Stack, answer_text, events_of

pytestmark = pytest.mark.realmodel

GATED = {"get_weather": {"function": "tests.realmodel.tools:get_weather", "requires_approval": True}}
SERVER = {"approval_secret": "a-secret-of-enough-length"}
ASK = "What is the weather in Paris?"
ROWS = ["user", "assistant:call", "tool", "assistant"]
HYDRATE = ["RUN_STARTED", "MESSAGES_SNAPSHOT", "RUN_FINISHED"]


def _instances(serve: Any, llama: LlamaServer, store_url: str) -> tuple[str, str]:
    """One that lets the model call (24 tokens: one whole call), one that takes the approval."""
    store = {"url": store_url}
    common: dict[str, Any] = {"store": store, "server": SERVER, "conversations": "server", "tools": GATED}
    asks = serve(llama_config(llama, "openai", max_tokens=24, extra=forced_call("openai"), **common))
    answers = serve(llama_config(llama, "openai", max_tokens=8, extra={**NO_THINKING, "tool_choice": "none"}, **common))
    return asks, answers


def _post(url: str, protocol: str, body: dict[str, Any]) -> httpx.Response:
    return httpx.post(f"{url}/agents/bot/{protocol}", json=body, timeout=120)


def _use_chat_approval(url: str, thread: str) -> dict[str, Any]:
    """Ask, and build the message list a useChat page sends back with its approval."""
    user = {"id": "u1", "role": "user", "parts": [{"type": "text", "text": ASK}]}
    response = _post(url, "chat", {"id": thread, "messages": [user], "trigger": "submit-message"})
    events = events_of(response.content)
    start = next(e for e in events if e["type"] == "tool-input-start")
    approval = next(e for e in events if e["type"] == "tool-approval-request")["approvalId"]
    tool_input = next(e for e in events if e["type"] == "tool-input-available")["input"]
    part = {
        "type": "tool-get_weather",
        "toolCallId": start["toolCallId"],
        "state": "approval-responded",
        "input": tool_input,
        "approval": {"id": approval, "approved": True},
    }
    message_id = events[0]["messageId"]
    assistant = {"id": message_id, "role": "assistant", "parts": [{"type": "step-start"}, part]}
    return {"id": thread, "messages": [user, assistant], "trigger": "submit-message", "messageId": message_id}


def _ag_ui_approval(url: str, thread: str) -> dict[str, Any]:
    """Ask, and build the AG-UI request that resumes the interrupt, approved."""
    user = {"id": "u1", "role": "user", "content": ASK}
    events = events_of(_post(url, "ag-ui", {"threadId": thread, "runId": "r1", "messages": [user]}).content)
    start = next(e for e in events if e["type"] == "TOOL_CALL_START")
    arguments = "".join(e["delta"] for e in events if e["type"] == "TOOL_CALL_ARGS")
    call = {"id": start["toolCallId"], "type": "function", "function": {"name": "get_weather", "arguments": arguments}}
    assistant = {"id": start["parentMessageId"], "role": "assistant", "toolCalls": [call]}
    (interrupt,) = events[-1]["outcome"]["interrupts"]
    resume = [{"interruptId": interrupt["id"], "status": "resolved"}]
    return {"threadId": thread, "runId": "r2", "messages": [user, assistant], "resume": resume}


@pytest.mark.parametrize("protocol", ["chat", "ag-ui"])
def test_an_approval_sent_again_reaches_no_model_and_the_next_turn_is_answered_on_gemma(
    serve: Any, calling: LlamaServer, gemma: LlamaServer, protocol: str, tmp_path: Path
) -> None:
    llama = calling
    tools.RUNS.clear()
    store_url = f"sqlite:///{tmp_path / 'threads.db'}"
    asks, answers = _instances(serve, llama, store_url)
    thread = f"replay-{protocol}-{secrets.token_hex(3)}"
    approval = (_use_chat_approval if protocol == "chat" else _ag_ui_approval)(asks, thread)
    approved = _post(answers, protocol, approval)
    assert approved.status_code == 200 and answer_text(events_of(approved.content)).strip()
    assert tools.RUNS == ["Paris"]
    rows = asyncio.run(Stack(protocol, store_url, []).rows(thread))
    assert rows == ROWS
    prompts = len(llama.prompts())  # 2: the call, the answer

    again = _post(answers, protocol, approval)
    if protocol == "chat":
        assert again.status_code == 422 and again.json()["error"]["code"] == "nothing_to_answer"
    else:
        assert [event["type"] for event in events_of(again.content)] == HYDRATE
    assert len(llama.prompts()) == prompts  # llama-server received no new request
    assert tools.RUNS == ["Paris"]
    assert asyncio.run(Stack(protocol, store_url, []).rows(thread)) == ROWS

    on_gemma = serve(
        llama_config(
            gemma, "openai", max_tokens=4, extra={}, store={"url": store_url}, conversations="server", tools=GATED
        )
    )
    before = len(gemma.prompts())
    if protocol == "chat":
        user = {"id": "u2", "role": "user", "parts": [{"type": "text", "text": "Thanks!"}]}
        next_turn = {"id": thread, "messages": [user], "trigger": "submit-message"}
    else:
        next_turn = {
            "threadId": thread,
            "runId": "r3",
            "messages": [{"id": "u2", "role": "user", "content": "Thanks!"}],
        }
    events = events_of(_post(on_gemma, protocol, next_turn).content)
    assert [e for e in events if e["type"] in ("RUN_ERROR", "error")] == []
    (prompt,) = gemma.prompts()[before:]
    assert [line for line in prompt.splitlines() if line.startswith("<start_of_turn>")] == [
        "<start_of_turn>user",
        "<start_of_turn>model",
        "<start_of_turn>user",
        "<start_of_turn>model",
        "<start_of_turn>user",
        "<start_of_turn>model",
    ]
    assert asyncio.run(Stack(protocol, store_url, []).rows(thread)) == [*ROWS, "user", "assistant"]

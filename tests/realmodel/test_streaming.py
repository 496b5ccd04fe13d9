"""A real model server behind chatgate: tokens stream one by one, in both protocols, on both wire kinds.

llama-server serves the OpenAI-compatible ``/v1/chat/completions`` and the Anthropic ``/v1/messages``;
chatgate talks to it through each (``wire``). What the model received is read from the prompts the
server logged: the server policy keeps the client's system text out of it, the client policy lets it in.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.providers.test_ui_clients import Serve, ag_ui, use_chat
from tests.realmodel.conftest import llama_config
from tests.realmodel.llama import LlamaServer

pytestmark = pytest.mark.realmodel

WIRES = ["openai", "anthropic"]
USER = [{"id": "u1", "role": "user", "content": "The capital of France is"}]
UI_USER = [{"id": "u1", "role": "user", "parts": [{"type": "text", "text": "The capital of France is"}]}]


def _types(result: dict[str, Any]) -> list[str]:
    return [event["type"] for event in result["events"]]


@pytest.mark.parametrize("wire", WIRES)
def test_ag_ui_streams_each_token_and_reports_usage(serve: Serve, llama: LlamaServer, wire: str) -> None:
    result = ag_ui(serve(llama_config(llama, wire, max_tokens=6)), USER)
    types = _types(result)
    assert types[0] == "RUN_STARTED" and types[-1] == "RUN_FINISHED", types
    assert types.count("TEXT_MESSAGE_CONTENT") >= 3  # token by token, not one block at the end
    (usage,) = result["events"][-1]["usage"]
    assert usage["inputTokens"] > 5 and 1 <= usage["outputTokens"] <= 6


@pytest.mark.parametrize("version", [5, 6, 7])
@pytest.mark.parametrize("wire", WIRES)
def test_use_chat_streams_each_token_and_ai_accepts_it(
    serve: Serve, llama: LlamaServer, wire: str, version: int
) -> None:
    url = serve(llama_config(llama, wire, max_tokens=6, vercel_ai_version=f"v{version}"))
    result = use_chat(url, version, UI_USER)
    types = [chunk["type"] for chunk in result["chunks"]]
    assert types.count("text-delta") >= 3
    text = "".join(chunk["delta"] for chunk in result["chunks"] if chunk["type"] == "text-delta")
    assert [part["text"] for part in result["message"]["parts"] if part["type"] == "text"] == [text]
    if version != 5:
        assert result["chunks"][-1]["finishReason"] in ("length", "stop")


@pytest.mark.parametrize("wire", WIRES)
def test_the_server_policy_keeps_the_clients_system_text_from_the_model(
    serve: Serve, llama: LlamaServer, wire: str
) -> None:
    url = serve(llama_config(llama, wire, max_tokens=1, system_prompt="OPERATOR-RULES-41"))
    client_system = {"id": "s1", "role": "system", "content": "CLIENT-RULES-97"}
    before = len(llama.prompts())
    ag_ui(url, [client_system, *USER])
    (prompt,) = llama.prompts()[before:]
    assert "OPERATOR-RULES-41" in prompt and "CLIENT-RULES-97" not in prompt
    assert "The capital of France is" in prompt


@pytest.mark.parametrize("wire", WIRES)
def test_the_client_policy_lets_the_clients_system_text_reach_the_model(
    serve: Serve, llama: LlamaServer, wire: str
) -> None:
    url = serve(llama_config(llama, wire, max_tokens=1, manage_system_prompt="client"))
    before = len(llama.prompts())
    ag_ui(url, [{"id": "s1", "role": "system", "content": "CLIENT-RULES-97"}, *USER])
    (prompt,) = llama.prompts()[before:]
    assert "CLIENT-RULES-97" in prompt

"""Real reasoning from a real model server, in both protocols and on both wire kinds.

This server renders ``Qwen-QwQ-32B.jinja``, whose prompt opens a ``<think>`` block; the request's
``thinking_budget_tokens`` has llama.cpp close it after a few tokens, and ``--reasoning-format deepseek``
streams what came before as ``reasoning_content`` (Anthropic wire: ``thinking`` blocks).
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.providers.test_ui_clients import Serve, ag_ui, use_chat
from tests.realmodel.conftest import llama_config
from tests.realmodel.llama import REASONING, LlamaServer, running_llama_server

pytestmark = pytest.mark.realmodel

THINKING = {  # the budget in each wire kind's own words: /v1/messages takes only Anthropic's ``thinking``
    "openai": {"chat_template_kwargs": {"enable_thinking": True}, "thinking_budget_tokens": 4},
    "anthropic": {
        "chat_template_kwargs": {"enable_thinking": True},
        "thinking": {"type": "enabled", "budget_tokens": 4},
    },
}


@pytest.fixture(scope="module")
def thinking_llama() -> Iterator[LlamaServer]:
    """Answers run to ``max_tokens``: after the closed ``<think>`` block comes text on any CPU."""
    with running_llama_server(template=REASONING, ignore_eos=True) as server:
        yield server


@pytest.mark.parametrize("wire", ["openai", "anthropic"])
def test_real_reasoning_streams_as_reasoning_then_text(serve: Serve, thinking_llama: LlamaServer, wire: str) -> None:
    url = serve(llama_config(thinking_llama, wire, max_tokens=12, extra=THINKING[wire]))
    types = [e["type"] for e in ag_ui(url, [{"id": "u1", "role": "user", "content": "Why is the sky blue?"}])["events"]]
    assert types.count("REASONING_MESSAGE_CONTENT") >= 2 and "TEXT_MESSAGE_CONTENT" in types
    assert types.index("REASONING_MESSAGE_CONTENT") < types.index("TEXT_MESSAGE_CONTENT")
    chat = use_chat(url, 6, [{"id": "u1", "role": "user", "parts": [{"type": "text", "text": "Why is the sky blue?"}]}])
    assert [c["type"] for c in chat["chunks"]].count("reasoning-delta") >= 2
    assert [p["type"] for p in chat["message"]["parts"] if p["type"] in ("reasoning", "text")] == ["reasoning", "text"]

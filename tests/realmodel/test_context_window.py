"""A context window per agent (issue 31) on a real model server with one small slot and Gemma's template.

The ``gemma`` server has one slot of 256 tokens and renders with Gemma 3's chat template, which refuses
two messages of the same role in a row. ``window = "auto"`` reads the slot's size from its ``/props``.
Turns are a few tokens each and answers two, so a thread outgrows the slot well before thirty turns
(``fail`` refuses the first turn that does not fit).
"""

from __future__ import annotations

import asyncio
import secrets
from pathlib import Path
from typing import Any

import httpx
import pytest

from chatgate.context.refusals import CONTEXT_FULL, CONTEXT_LENGTH_EXCEEDED
from tests.realmodel.conftest import GEMMA_CONTEXT, llama_config
from tests.realmodel.llama import LlamaServer
from tests.servers import _free_port as free_port
from tests.store.conftest import _create_database
from tests.threads.replay_flows import Stack, events_of

pytestmark = pytest.mark.realmodel

TURNS = 30


def _store(kind: str, tmp_path: Path, request: pytest.FixtureRequest) -> str:
    if kind == "sqlite":
        return f"sqlite:///{tmp_path / 'threads.db'}"
    server_url: str = request.getfixturevalue("postgres_url")
    database = f"ctx_{secrets.token_hex(6)}"
    asyncio.run(_create_database(server_url, database))
    return server_url.rsplit("/", 1)[0] + f"/{database}"


def _config(model: LlamaServer | str, store_url: str, **context: Any) -> Any:
    return llama_config(
        model, "openai", max_tokens=2, extra={}, store={"url": store_url}, conversations="server", context=context
    )


def _turn(url: str, protocol: str, thread: str, turn: int) -> list[dict[str, Any]]:
    """One user message on ``thread``, the server holding the rest; the frames the client got."""
    text = f"Turn {turn}: hi"
    if protocol == "ag-ui":
        message: dict[str, Any] = {"id": f"u{turn}", "role": "user", "content": text}
        body: dict[str, Any] = {"threadId": thread, "runId": f"r{turn}", "messages": [message]}
    else:
        message = {"id": f"u{turn}", "role": "user", "parts": [{"type": "text", "text": text}]}
        body = {"id": thread, "messages": [message], "trigger": "submit-message"}
    response = httpx.post(f"{url}/agents/bot/{protocol}", json=body, timeout=120)
    assert response.status_code == 200, response.text
    return events_of(response.content)


def _answered(events: list[dict[str, Any]]) -> bool:
    types = [event["type"] for event in events]
    return types[-1] in ("RUN_FINISHED", "finish") and "RUN_ERROR" not in types and "error" not in types


@pytest.mark.parametrize("store", ["sqlite", "postgres"])
def test_thirty_turns_on_one_thread_are_all_answered_under_drop_oldest(
    serve: Any, gemma: LlamaServer, store: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    store_url = _store(store, tmp_path, request)
    url = serve(_config(gemma, store_url, window="auto"))
    thread = f"long-{store}"
    before = len(gemma.prompts())
    unanswered = [turn for turn in range(1, TURNS + 1) if not _answered(_turn(url, "ag-ui", thread, turn))]
    assert unanswered == []
    (agent,) = httpx.get(f"{url}/agents", timeout=10).json()["agents"]
    assert agent["context"] == {"window": GEMMA_CONTEXT, "strategy": "drop_oldest"}  # read from /props
    prompts = gemma.prompts()[before:]
    assert len(prompts) == TURNS  # one model call per turn: no length refusal needed a retry
    assert "Turn 1: hi" not in prompts[-1] and f"Turn {TURNS}: hi" in prompts[-1]  # the model saw a window
    rows = asyncio.run(Stack(store, store_url, []).rows(thread))
    assert rows == ["user", "assistant"] * TURNS  # the store kept every turn


@pytest.mark.parametrize("protocol", ["ag-ui", "chat"])
def test_fail_ends_a_thread_that_outgrew_the_window_with_context_length_exceeded(
    serve: Any, gemma: LlamaServer, protocol: str, tmp_path: Path
) -> None:
    url = serve(_config(gemma, f"sqlite:///{tmp_path / 'threads.db'}", window="auto", strategy="fail"))
    before = len(gemma.prompts())
    for turn in range(1, TURNS + 1):
        events = _turn(url, protocol, "full", turn)
        if not _answered(events):
            break
    assert turn > 2  # the first turns fit
    if protocol == "ag-ui":
        assert events[-1] == {**events[-1], "type": "RUN_ERROR", "code": CONTEXT_LENGTH_EXCEEDED}
    else:
        assert {"type": "error", "errorText": CONTEXT_FULL} in events
    assert len(gemma.prompts()) - before == turn - 1  # the failing turn never reached the model


@pytest.mark.parametrize("store", ["sqlite", "postgres"])
def test_a_turn_failed_while_the_model_was_down_leaves_a_thread_gemma_answers(
    serve: Any, gemma: LlamaServer, store: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    store_url = _store(store, tmp_path, request)
    thread = f"down-{store}"
    up = serve(_config(gemma, store_url, window="auto"))
    down = serve(_config(f"http://127.0.0.1:{free_port()}", store_url, window=GEMMA_CONTEXT))  # nothing listens there
    assert _answered(_turn(up, "ag-ui", thread, 1))
    assert not _answered(_turn(down, "ag-ui", thread, 2))
    before = len(gemma.prompts())
    assert _answered(_turn(up, "ag-ui", thread, 3))
    (prompt,) = gemma.prompts()[before:]
    assert "Turn 2: hi" in prompt and "Turn 3: hi" in prompt  # nothing lost: one user turn holds both
    assert prompt.count("<start_of_turn>user") == 2
    rows = asyncio.run(Stack(store, store_url, []).rows(thread))
    assert rows == ["user", "assistant", "user", "user", "assistant"]

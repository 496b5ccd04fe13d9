"""A context window per agent (issue 31) on a real model server with one small slot and Gemma's template.

The ``gemma`` server has one slot of 256 tokens and renders with Gemma 3's chat template, which refuses
two messages of the same role in a row. ``window = "auto"`` reads the slot's size from its ``/props``.
Turns are a few tokens each and answers two, so a thread outgrows the slot well before thirty turns
(``fail`` refuses the first turn that does not fit; ``summarize`` has Gemma fold the oldest turns into
the thread's summary).
"""

from __future__ import annotations

import asyncio
import secrets
from pathlib import Path
from typing import Any

import httpx
import pytest

from chatgate.context import SUMMARY_INSTRUCTION, SUMMARY_REQUEST
from chatgate.providers.refusals import CONTEXT_FULL, CONTEXT_LENGTH_EXCEEDED
from tests.realmodel.conftest import GEMMA_CONTEXT, llama_config
from tests.realmodel.llama import LlamaServer
from tests.servers import _free_port as free_port
from tests.store.conftest import _create_database
from tests.threads.replay_flows import Stack, events_of

# 30 model calls (and summaries) a test: about 40 s on an idle 2-core machine, past the suite's 120 s hang
# guard when the machine is loaded. The guard for these is sized from the work, not from an idle run.
pytestmark = [pytest.mark.realmodel, pytest.mark.timeout(600)]

TURNS = 30
NAMED = "Turn 1: hi, my name is Ottoline"
"""The first turn says a name: a summary that folds it in should keep it."""


def _store(kind: str, tmp_path: Path, request: pytest.FixtureRequest) -> str:
    if kind == "sqlite":
        return f"sqlite:///{tmp_path / 'threads.db'}"
    server_url: str = request.getfixturevalue("postgres_url")
    database = f"ctx_{secrets.token_hex(6)}"
    asyncio.run(_create_database(server_url, database))
    return server_url.rsplit("/", 1)[0] + f"/{database}"


FIXED_ANSWER = {"grammar": 'root ::= "Hi there"'}
"""llama.cpp's grammar field: every answer is the same text on any CPU. Unforced, the greedy answers (two
tokens) follow the CPU's floating-point path, and so do the history's token counts: on an AMD EPYC the
thirtieth-turn thread met a length refusal at turn 21 that the machine it was written on never saw."""


def _config(model: LlamaServer | str, store_url: str, extra: Any = None, **context: Any) -> Any:
    return llama_config(
        model,
        "openai",
        max_tokens=2,
        extra=extra if extra is not None else {},
        store={"url": store_url},
        conversations="server",
        context=context,
    )


def _turn(url: str, protocol: str, thread: str, turn: int) -> list[dict[str, Any]]:
    """One user message on ``thread``, the server holding the rest; the frames the client got."""
    text = NAMED if turn == 1 else f"Turn {turn}: hi"
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


# summarize on both stores: the summary is a row of the thread's own (thread_summaries). drop_oldest on one:
# it windows the history after the store loaded it, and tests/threads/test_context_window_thread.py runs a
# drop_oldest thread on both stores.
@pytest.mark.parametrize(
    ("strategy", "store"), [("drop_oldest", "sqlite"), ("summarize", "sqlite"), ("summarize", "postgres")]
)
def test_thirty_turns_on_one_thread_are_all_answered(
    serve: Any, gemma: LlamaServer, strategy: str, store: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    store_url = _store(store, tmp_path, request)
    # summarize needs Gemma's own words for its summaries (the call shares the agent's settings)
    forced = FIXED_ANSWER if strategy == "drop_oldest" else None
    url = serve(_config(gemma, store_url, forced, window="auto", strategy=strategy))
    thread = f"long-{strategy}-{store}"
    before = len(gemma.prompts())
    unanswered = [turn for turn in range(1, TURNS + 1) if not _answered(_turn(url, "ag-ui", thread, turn))]
    assert unanswered == []
    (agent,) = httpx.get(f"{url}/agents", timeout=10).json()["agents"]
    assert agent["context"] == {"window": GEMMA_CONTEXT, "strategy": strategy}  # read from /props
    prompts = gemma.prompts()[before:]
    # A summary call is one user turn: the transcript, then the instruction.
    summaries = [prompt for prompt in prompts if SUMMARY_INSTRUCTION in prompt.split("<end_of_turn>")[0]]
    answers = [prompt for prompt in prompts if prompt not in summaries]
    assert len(answers) == TURNS  # one model call per turn: no length refusal needed a retry
    assert f"Turn {TURNS}: hi" in answers[-1]
    rows = asyncio.run(Stack(store, store_url, []).rows(thread))
    assert rows == ["user", "assistant"] * TURNS  # the store kept every turn
    summary = httpx.get(f"{url}/agents/bot/threads/{thread}", timeout=10).json()["summary"]
    if strategy == "drop_oldest":
        assert summaries == [] and summary is None
        assert "Turn 1: hi" not in answers[-1]  # the model saw a window
        return
    # Gemma wrote the summaries (each from a transcript of the turns it folds in), stored and sent on.
    assert summaries and summary is not None and summary["model"] == "llama:gemma-3-270m"
    assert all("User: Turn " in prompt and "Assistant: " in prompt for prompt in summaries)
    assert SUMMARY_REQUEST in answers[-1] and summary["messages"] % 2 == 0  # whole turns, each asked and answered
    # Gemma's summaries keep the first turn's fact (the call puts the transcript before the instruction:
    # with the instruction first, this model wrote the instruction back as the summary).
    written = {_summary_in(prompt) for prompt in answers if SUMMARY_REQUEST in prompt}
    assert written and all("Ottoline" in text for text in written), written


def _summary_in(prompt: str) -> str:
    """The summary a prompt carries: the model turn after ``SUMMARY_REQUEST``."""
    after = prompt.split(SUMMARY_REQUEST, 1)[1]
    return after.split("<start_of_turn>model\n", 1)[1].split("<end_of_turn>", 1)[0]


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

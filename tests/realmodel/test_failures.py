"""How a real model server fails, and that each failure ends in-protocol with its detail in chatgate's log.

A hang-up cancels the model's work (its ``/metrics`` shows no request processing and no more decode
steps); context overflow (``context_length_exceeded``) and a bad parameter are the server's own 400s;
a server that is down or killed mid-answer ends the run in ``RUN_ERROR`` / ``error`` + ``finish``, never a
hung or cut stream.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from chatgate.providers.refusals import CONTEXT_FULL, CONTEXT_LENGTH_EXCEEDED
from tests.providers.test_ui_clients import Serve, ag_ui, use_chat
from tests.realmodel.conftest import NO_THINKING, llama_config
from tests.realmodel.llama import LlamaServer, running_llama_server
from tests.servers import _free_port as free_port

pytestmark = pytest.mark.realmodel

WIRES = ["openai", "anthropic"]
USER = [{"id": "u1", "role": "user", "content": "Once upon a time"}]
UI_USER = [{"id": "u1", "role": "user", "parts": [{"type": "text", "text": "Once upon a time"}]}]


def _run_body(messages: list[dict[str, Any]]) -> dict[str, Any]:
    return {"threadId": "t", "runId": "r", "messages": messages, "tools": [], "context": [], "forwardedProps": {}}


def _frames(response: httpx.Response) -> Iterator[dict[str, Any]]:
    for line in response.iter_lines():
        if line.startswith("data: "):
            yield json.loads(line[6:])


def _settled(llama: LlamaServer, seconds: float = 10.0) -> tuple[float, float]:
    """Wait (bounded) until no request is processing; then the decode count, read twice 0.5 s apart."""
    deadline = time.monotonic() + seconds
    while llama.metric("requests_processing") > 0 and time.monotonic() < deadline:
        time.sleep(0.05)
    first = llama.metric("n_decode_total")
    time.sleep(0.5)
    return first, llama.metric("n_decode_total")


@pytest.mark.parametrize("wire", WIRES)
def test_a_client_hanging_up_cancels_the_models_work(serve: Serve, llama: LlamaServer, wire: str) -> None:
    url = serve(llama_config(llama, wire, max_tokens=400))
    decoded_before = llama.metric("n_decode_total")
    with httpx.stream("POST", f"{url}/ag-ui", json=_run_body(USER), timeout=60) as response:
        for frame in _frames(response):
            if frame["type"] == "TEXT_MESSAGE_CONTENT":
                break  # hang up after the first token
    first, second = _settled(llama)
    assert llama.metric("requests_processing") == 0
    assert first == second  # no decode step after the hang-up settled
    assert first - decoded_before < 400  # it never generated the whole answer


@pytest.mark.parametrize("wire", WIRES)
def test_context_overflow_ends_in_protocol_with_the_servers_detail_logged(
    serve: Serve, llama: LlamaServer, wire: str, caplog: pytest.LogCaptureFixture
) -> None:
    url = serve(llama_config(llama, wire, max_tokens=4))
    long = [{"id": "u1", "role": "user", "content": "word " * 3000}]  # far more than a 1024-token slot
    result = ag_ui(url, long)
    last = result["events"][-1]  # llama.cpp's exceed_context_size_error, recognized (issue 31)
    assert last["type"] == "RUN_ERROR" and last["code"] == CONTEXT_LENGTH_EXCEEDED and last["message"] == CONTEXT_FULL
    chat = use_chat(url, 6, [{"id": "u1", "role": "user", "parts": [{"type": "text", "text": "word " * 3000}]}])
    assert [c["type"] for c in chat["chunks"]][-3:] == ["error", "finish-step", "finish"]
    assert {"type": "error", "errorText": CONTEXT_FULL} in chat["chunks"]
    assert "exceed" in caplog.text and "context" in caplog.text


def test_a_bad_parameter_ends_in_protocol_with_the_servers_detail_logged(
    serve: Serve, llama: LlamaServer, caplog: pytest.LogCaptureFixture
) -> None:
    extra = {**NO_THINKING, "n_probs": "many"}
    result = ag_ui(serve(llama_config(llama, "openai", extra=extra)), USER)
    assert result["events"][-1]["type"] == "RUN_ERROR"
    assert "400" in caplog.text and "n_probs" in caplog.text


@pytest.mark.parametrize("wire", WIRES)
def test_a_server_that_is_down_ends_in_protocol(serve: Serve, wire: str, caplog: pytest.LogCaptureFixture) -> None:
    url = serve(llama_config(f"http://127.0.0.1:{free_port()}", wire))  # nothing listens there
    result = ag_ui(url, USER)
    assert result["events"][-1]["type"] == "RUN_ERROR"
    chat = use_chat(url, 6, UI_USER)
    assert [c["type"] for c in chat["chunks"]][-3:] == ["error", "finish-step", "finish"]
    assert "model call failed" in caplog.text


@pytest.mark.parametrize("wire", WIRES)
def test_a_server_killed_mid_answer_ends_in_protocol(serve: Serve, wire: str, caplog: pytest.LogCaptureFixture) -> None:
    with running_llama_server(ignore_eos=True) as doomed:  # its own server: this one dies, mid-answer
        url = serve(llama_config(doomed, wire, max_tokens=400))
        with httpx.stream("POST", f"{url}/ag-ui", json=_run_body(USER), timeout=60) as response:
            frames = _frames(response)
            types = []
            for frame in frames:
                types.append(frame["type"])
                if frame["type"] == "TEXT_MESSAGE_CONTENT":
                    doomed.process.kill()
                    break
            types += [frame["type"] for frame in frames]
    assert "TEXT_MESSAGE_CONTENT" in types
    assert types[-2:] == ["TEXT_MESSAGE_END", "RUN_ERROR"] or types[-1] == "RUN_ERROR", types
    assert "model call failed" in caplog.text

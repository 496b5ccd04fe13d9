"""Two real llama-servers: the first killed (SIGKILL) ten tokens into an answer, the second answers it.

chatgate retracts the partial answer (AG-UI's ``MESSAGES_SNAPSHOT``, ai 7's ``reset-step``) and the
step runs again on the second server with the same input: the client is left with one whole answer.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from chatgate.config import Config
from tests.conftest import check_use_chat_stream, make_config, run_node_client
from tests.providers.test_ui_clients import Serve
from tests.realmodel.conftest import NO_THINKING
from tests.realmodel.llama import LlamaServer, running_llama_server

pytestmark = pytest.mark.realmodel

WIRES = ["openai", "anthropic"]
KILL_AFTER = 10  # tokens (content frames) the first server streams before it is killed


def chain_config(doomed: LlamaServer, live: LlamaServer, wire: str, version: str = "v6") -> Config:
    def provider(server: LlamaServer) -> dict[str, Any]:
        base_url = f"{server.url}/v1" if wire == "openai" else server.url
        return {"kind": wire, "base_url": base_url, "retries": 0, "timeouts": {"connect": 5, "first_token": 60}}

    settings = {"max_tokens": 40, "temperature": 0, "extra_body": NO_THINKING}
    bot = {
        "model": "doomed:gemma-3-270m",
        "fallbacks": ["live:gemma-3-270m"],
        "default": True,
        "model_settings": settings,
        "vercel_ai_version": version,
    }
    return make_config({"bot": bot}, providers={"doomed": provider(doomed), "live": provider(live)})


def _frames(response: httpx.Response) -> Iterator[dict[str, Any]]:
    for line in response.iter_lines():
        if line.startswith("data: ") and line != "data: [DONE]":
            yield json.loads(line[6:])


@pytest.mark.parametrize("wire", WIRES)
def test_ag_ui_the_answer_completes_on_the_second_server(serve: Serve, llama: LlamaServer, wire: str) -> None:
    body = {"threadId": "t", "runId": "r", "messages": [{"id": "u1", "role": "user", "content": "Once upon a time"}]}
    with running_llama_server(ignore_eos=True) as doomed:  # its own server: this one dies, mid-answer
        url = serve(chain_config(doomed, llama, wire))
        with httpx.stream("POST", f"{url}/ag-ui", json=body, timeout=120) as response:
            events, shown = [], 0
            for event in _frames(response):
                events.append(event)
                if event["type"] == "TEXT_MESSAGE_CONTENT" and doomed.process.poll() is None:
                    shown += 1
                    if shown == KILL_AFTER:
                        doomed.process.kill()
    types = [event["type"] for event in events]
    assert types[-1] == "RUN_FINISHED", types
    snapshot = types.index("MESSAGES_SNAPSHOT")
    assert [m["id"] for m in events[snapshot]["messages"]] == ["u1"]  # the partial answer is dropped
    after = events[snapshot + 1 :]
    replacement = "".join(e["delta"] for e in after if e["type"] == "TEXT_MESSAGE_CONTENT")
    assert len(replacement.split()) >= 5, replacement  # the second server's whole answer (40 tokens)
    started = [e["messageId"] for e in events if e["type"] == "TEXT_MESSAGE_START"]
    assert len(started) == 2 and started[0] != started[1]


def test_use_chat_7_the_answer_completes_on_the_second_server(serve: Serve, llama: LlamaServer) -> None:
    body = {
        "id": "c1",
        "trigger": "submit-message",
        "messages": [{"id": "u1", "role": "user", "parts": [{"type": "text", "text": "Once upon a time"}]}],
    }
    with running_llama_server(ignore_eos=True) as doomed:
        url = serve(chain_config(doomed, llama, "openai", "v7"))
        with httpx.stream("POST", f"{url}/api/chat", json=body, timeout=120) as response:
            lines, shown = [], 0
            for line in response.iter_lines():
                lines.append(line)
                if '"type":"text-delta"' in line and doomed.process.poll() is None:
                    shown += 1
                    if shown == KILL_AFTER:
                        doomed.process.kill()
    text = "".join(f"{line}\n" for line in lines)
    types = check_use_chat_stream(7, text)
    assert types.count("reset-step") == 1 and types[-1] == "finish" and "error" not in types
    message = run_node_client("vercel_ai_validate.mjs", {"version": 7, "text": text})["message"]
    parts = [part for part in message["parts"] if part["type"] == "text"]
    assert len(parts) == 1 and len(parts[0]["text"].split()) >= 5, parts

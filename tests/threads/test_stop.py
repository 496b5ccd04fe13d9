"""``POST .../threads/{id}/stop``: the run ends at once in its protocol, its turn saved as partial."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from typing import Any

import httpx
import pytest

from chatgate.config import Config
from tests.conftest import make_config
from tests.threads.test_resume_ag_ui import drop_after_first_delta as drop_ag_ui
from tests.threads.test_resume_usechat import drop_after_first_delta as drop_usechat

Serve = Callable[[Config], str]
_TEXT = " ".join(f"w{n}" for n in range(300))  # 30 s an answer: still running when the stop comes, on any machine
WAIT = 15  # seconds a failing test waits for a stopped stream to end; half the answer


def _config(store_url: str) -> Config:
    agent = {"model": "builtin:echo", "conversations": "server", "model_settings": {"delay": 0.1}}
    return make_config({"bot": agent}, store={"url": store_url})


def _follow(url: str, path: str, method: str = "GET", body: Any = None) -> tuple[list[str], threading.Thread]:
    lines: list[str] = []

    def read() -> None:
        with httpx.stream(method, f"{url}{path}", json=body, timeout=30) as response:
            lines.extend(line for line in response.iter_lines() if line)

    reader = threading.Thread(target=read)
    reader.start()
    return lines, reader


def _wait_for(lines: list[str], text: str) -> None:
    deadline = time.monotonic() + 10
    while not any(text in line for line in lines):
        assert time.monotonic() < deadline, lines
        time.sleep(0.02)


def test_stop_ends_a_usechat_stream_with_abort_and_saves_the_turn_partial(serve: Serve, store_url: str) -> None:
    url = serve(_config(store_url))
    message = {"id": "u1", "role": "user", "parts": [{"type": "text", "text": _TEXT}]}
    lines, reader = _follow(url, "/agents/bot/chat", "POST", {"id": "c1", "message": message})
    _wait_for(lines, '"text-delta"')
    assert httpx.post(f"{url}/agents/bot/threads/c1/stop").json() == {"stopped": True}
    reader.join(timeout=WAIT)
    assert not reader.is_alive()
    # as the AI SDK's own server ends an aborted stream: abort, no finish
    assert lines[-2] == 'data: {"type":"abort"}' and lines[-1] == "data: [DONE]"
    assert not any('"type":"error"' in line or '"type":"finish"' in line for line in lines)
    thread = httpx.get(f"{url}/agents/bot/threads/c1").json()
    assert thread["running"] is False
    answer = httpx.get(f"{url}/agents/bot/threads/c1/messages").json()["messages"][1]
    assert answer["metadata"]["chatgate"]["status"] == "partial"
    assert not answer["parts"][-1]["text"].endswith("w299")
    # A stopped run is not resumable, and a second stop finds nothing running.
    assert httpx.get(f"{url}/agents/bot/chat/c1/stream").status_code == 204
    assert httpx.post(f"{url}/agents/bot/threads/c1/stop").json() == {"stopped": False}


def test_stop_ends_an_ag_ui_run_with_a_cancelled_outcome(serve: Serve, store_url: str) -> None:
    url = serve(_config(store_url))
    drop_ag_ui(url, "t1")
    lines, reader = _follow(
        url,
        "/agents/bot/ag-ui",
        "POST",
        {"threadId": "t1", "runId": "r2", "messages": [{"id": "u-t1", "role": "user", "content": "x"}]},
    )
    _wait_for(lines, "TEXT_MESSAGE_CONTENT")
    assert httpx.post(f"{url}/agents/bot/threads/t1/stop").json() == {"stopped": True}
    reader.join(timeout=WAIT)
    events = [json.loads(line[6:]) for line in lines]
    assert [e["type"] for e in events[-3:]] == ["TEXT_MESSAGE_END", "STEP_FINISHED", "RUN_FINISHED"]
    assert events[-1]["outcome"] == {"type": "cancelled"}
    answer = httpx.get(f"{url}/agents/bot/threads/t1/messages").json()["messages"][1]
    assert answer["metadata"]["chatgate"]["status"] == "partial"


def test_a_finished_run_ignores_a_stop_and_stays_complete(serve: Serve, store_url: str) -> None:
    url = serve(make_config({"bot": {"model": "builtin:echo", "conversations": "server"}}, store={"url": store_url}))
    message = {"id": "u1", "role": "user", "parts": [{"type": "text", "text": "hi"}]}
    httpx.post(f"{url}/agents/bot/chat", json={"id": "c1", "message": message})
    assert httpx.post(f"{url}/agents/bot/threads/c1/stop").json() == {"stopped": False}
    answer = httpx.get(f"{url}/agents/bot/threads/c1/messages").json()["messages"][1]
    assert "status" not in answer.get("metadata", {}).get("chatgate", {})


@pytest.mark.parametrize(
    ("path", "status"), [("/agents/nobody/threads/c1/stop", 404), ("/agents/bot/threads/c9/stop", 404)]
)
def test_stop_refusals(serve: Serve, store_url: str, path: str, status: int) -> None:
    url = serve(_config(store_url))
    response = httpx.post(f"{url}{path}")
    assert response.status_code == status and "error" in response.json()


def test_a_usechat_resume_after_a_drop_then_stop(serve: Serve, store_url: str) -> None:
    url = serve(_config(store_url))
    drop_usechat(url, "c1")
    lines, reader = _follow(url, "/agents/bot/chat/c1/stream")
    _wait_for(lines, '"text-delta"')
    assert httpx.post(f"{url}/agents/bot/threads/c1/stop").json() == {"stopped": True}
    reader.join(timeout=WAIT)
    assert lines[-1] == "data: [DONE]"

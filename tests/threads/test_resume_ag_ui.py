"""AG-UI reconnect: HttpAgent on a thread whose run still goes gets that run, replayed, as one valid run."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import httpx

from chatgate.config import Config
from tests.conftest import make_config, run_node_client
from tests.pacing import OUTLAST, seconds_of, words_lasting

Serve = Callable[[Config], str]
_TEXT = " ".join(f"word{n}" for n in range(24))
DELAY = 0.15


def _config(store_url: str) -> Config:
    """``bot`` answers slowly, so a run is still going when the client comes back; ``quick`` is the same agent
    without the delay, for the unbroken answer and for runs that only need to end."""
    agent = {"model": "builtin:echo", "conversations": "server"}
    return make_config({"bot": {**agent, "model_settings": {"delay": DELAY}}, "quick": agent}, store={"url": store_url})


def _run(url: str, thread_id: str, messages: list[dict[str, Any]], agent: str = "bot") -> Any:
    return run_node_client(
        "ag_ui_run.mjs", {"url": f"{url}/agents/{agent}/ag-ui", "input": {"threadId": thread_id, "messages": messages}}
    )


def _user(thread_id: str, text: str = _TEXT) -> dict[str, Any]:
    return {"id": f"u-{thread_id}", "role": "user", "content": text}


def _lasting_text(url: str) -> str:
    """A text whose slow answer outlasts the Node client's start, timed now on a quick thread."""
    return words_lasting(OUTLAST * seconds_of(lambda: _run(url, "probe", [_user("probe")], agent="quick")), DELAY)


def drop_after_first_delta(
    url: str, thread_id: str, text: str = _TEXT, path: str = "/agents/bot/ag-ui", headers: dict[str, str] | None = None
) -> list[dict[str, Any]]:
    """Start a run at ``path`` and hang up after its first text delta; the events read until then."""
    body = {"threadId": thread_id, "runId": "r1", "messages": [_user(thread_id, text)], "tools": [], "context": []}
    events: list[dict[str, Any]] = []
    with httpx.stream("POST", f"{url}{path}", json=body, headers=headers, timeout=30) as response:
        assert response.status_code == 200, response.read()
        for line in response.iter_lines():
            if line.startswith("data: "):
                events.append(json.loads(line[6:]))
                if events[-1]["type"] == "TEXT_MESSAGE_CONTENT":
                    break
    return events


def test_a_reconnect_follows_the_running_run_to_the_message_an_unbroken_one_gives(serve: Serve, store_url: str) -> None:
    url = serve(_config(store_url))
    text = _lasting_text(url)
    unbroken = _run(url, "whole", [_user("whole", text)], agent="quick")
    dropped = drop_after_first_delta(url, "t1", text)
    assert httpx.get(f"{url}/agents/bot/threads/t1").json()["running"]
    resumed = _run(url, "t1", [_user("t1", text)])  # same threadId, nothing new: a reconnect
    types = [event["type"] for event in resumed["events"]]
    assert types.count("RUN_STARTED") == 1 and types[-1] == "RUN_FINISHED"
    # Replayed from RUN_STARTED; a snapshot of the thread before the run resets what the client kept.
    assert types[1] == "MESSAGES_SNAPSHOT" and types.count("MESSAGES_SNAPSHOT") == 1
    assert [m["id"] for m in resumed["events"][1]["messages"]] == ["u-t1"]
    assert [resumed["events"][0], *resumed["events"][2 : len(dropped) + 1]] == dropped
    assert [m["role"] for m in resumed["messages"]] == ["user", "assistant"]
    assert resumed["messages"][1]["content"] == unbroken["messages"][1]["content"]
    stored = httpx.get(f"{url}/agents/bot/threads/t1/messages").json()["messages"]
    assert stored[1]["parts"][-1]["text"] == unbroken["messages"][1]["content"]


def test_a_client_that_kept_the_partial_answer_gets_it_rebuilt_not_doubled(serve: Serve, store_url: str) -> None:
    url = serve(_config(store_url))
    text = _lasting_text(url)
    unbroken = _run(url, "whole", [_user("whole", text)], agent="quick")
    dropped = drop_after_first_delta(url, "t1", text)
    start = next(event for event in dropped if event["type"] == "TEXT_MESSAGE_START")
    kept = {"id": start["messageId"], "role": "assistant", "content": dropped[-1]["delta"]}
    resumed = _run(url, "t1", [_user("t1", text), kept])  # what HttpAgent holds after its stream broke
    assert [m["role"] for m in resumed["messages"]] == ["user", "assistant"]
    assert resumed["messages"][1]["content"] == unbroken["messages"][1]["content"]


def test_once_the_run_is_over_a_reconnect_is_a_hydrate(serve: Serve, store_url: str) -> None:
    url = serve(_config(store_url))
    _run(url, "t1", [_user("t1")], agent="quick")
    hydrated = _run(url, "t1", [_user("t1")], agent="quick")
    assert [e["type"] for e in hydrated["events"]] == ["RUN_STARTED", "MESSAGES_SNAPSHOT", "RUN_FINISHED"]

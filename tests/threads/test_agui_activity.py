"""AG-UI ``activity`` messages on a server-held thread: stored and snapshotted as sent, never sent to the
model; and ``RUN_STARTED.parentRunId`` naming the run a client says this one continues."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import httpx

from chatgate.config import Config
from tests.conftest import check_ag_ui_events, make_config, run_node_client
from tests.providers.fakes import fake_in_thread, text_reply
from tests.providers.support import provider_table

Serve = Callable[[Config], str]
PLAN = {"id": "act-1", "role": "activity", "activityType": "plan", "content": {"steps": ["look", "answer"]}}
HELLO = {"id": "u1", "role": "user", "content": "hello"}


def _run(url: str, messages: list[dict[str, Any]], **extra: Any) -> Any:
    request = {"threadId": "t1", "messages": messages, **extra}
    return run_node_client("ag_ui_run.mjs", {"url": f"{url}/agents/bot/ag-ui", "input": request})


def _post(url: str, body: dict[str, Any]) -> list[dict[str, Any]]:
    response = httpx.post(f"{url}/agents/bot/ag-ui", json=body, timeout=30)
    return [json.loads(line[len("data: ") :]) for line in response.text.splitlines() if line]


def test_an_activity_is_kept_in_the_thread_and_its_snapshot_but_never_reaches_the_model(
    serve: Serve, store_url: str
) -> None:
    with fake_in_thread(text_reply("openai", "Hi.")) as fake:
        config = make_config(
            {"bot": {"model": "up:model-x", "conversations": "server"}},
            providers={"up": provider_table("openai", fake.url)},
            store={"url": store_url},
        )
        url = serve(config)
        # HttpAgent 1.0 sends neither activity messages nor a parentRunId, so these bodies are posted here.
        first = _post(url, {"threadId": "t1", "runId": "run-1", "parentRunId": "run-0", "messages": [PLAN, HELLO]})
        alone = _post(url, {"threadId": "t1", "runId": "run-2", "messages": [{**PLAN, "id": "act-2"}]})
        hydrated = _run(url, [])  # a fresh page, through the real client
    assert len(fake.requests) == 1  # one model call: the activity alone started no run
    sent = fake.requests[0].body["messages"]
    assert [message["role"] for message in sent] == ["user"] and "answer" not in json.dumps(sent)
    check_ag_ui_events([*first, *alone])
    started = first[0]
    assert started["type"] == "RUN_STARTED" and started["parentRunId"] == "run-0"
    # an activity alone adds no turn: a hydrate, and it is not stored
    assert [e["type"] for e in alone] == ["RUN_STARTED", "MESSAGES_SNAPSHOT", "RUN_FINISHED"]
    assert "parentRunId" not in hydrated["events"][0]
    snapshot = next(e for e in hydrated["events"] if e["type"] == "MESSAGES_SNAPSHOT")["messages"]
    assert [m["role"] for m in snapshot] == ["activity", "user", "assistant"]
    assert snapshot[0] == PLAN  # as sent: id, type and content

"""A stored thread's run holds its caller's stream slot until the run ends, not until its client hangs up.

Counted at a fake OpenAI upstream over real HTTP: a key limited to 2 concurrent streams, whose clients
hang up after the first byte while their runs go on, never has more than 2 model calls running.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest

from chatgate.config import Config
from tests.conftest import make_config
from tests.providers.fakes import Reply, fake_in_thread, openai_chunk
from tests.providers.support import provider_table

Serve = Callable[[Config], str]
SECRET = "slots-secret-0123456789"
AUTH = {"authorization": f"Bearer {SECRET}"}


def held_reply(release: threading.Event) -> Reply:
    """The first word at once, the rest when ``release`` is set: the runs go on while every client hangs up."""
    return Reply([openai_chunk({"content": "first "}), release, openai_chunk({}, "stop"), b"data: [DONE]\n\n"])


def body(thread: str) -> dict[str, Any]:
    return {"threadId": thread, "runId": "r", "messages": [{"id": "u1", "role": "user", "content": "hi"}]}


def hang_up_after_the_first_byte(base: str, thread: str) -> int:
    """Start a run on ``thread``, read one chunk and hang up; the status it was answered with."""
    with httpx.Client(timeout=30) as client, client.stream("POST", base, json=body(thread), headers=AUTH) as response:
        if response.status_code == 200:
            next(response.iter_raw())
        return response.status_code


@pytest.mark.parametrize("limits", ["memory", "redis"])
def test_clients_that_hang_up_do_not_free_their_slot_while_the_run_goes_on(
    serve: Serve, tmp_path: Path, limits: str, request: pytest.FixtureRequest
) -> None:
    server = {"redis_url": request.getfixturevalue("redis_url")} if limits == "redis" else {}
    release = threading.Event()
    with fake_in_thread(held_reply(release)) as upstream:
        config = make_config(
            {"bot": {"model": "up:m", "conversations": "server"}},
            providers={"up": provider_table("openai", upstream.url, timeouts={"idle": 10.0})},
            store={"url": f"sqlite:///{tmp_path / 'threads.db'}"},
            keys=[{"id": f"k-{limits}-{time.time_ns()}", "key": SECRET, "max_concurrent_streams": 2}],
            server=server,
        )
        base = f"{serve(config)}/agents/bot/ag-ui"
        statuses = [hang_up_after_the_first_byte(base, f"t{n}") for n in range(10)]
        assert statuses == [200, 200] + [429] * 8
        assert len(upstream.requests) == 2  # at most 2 model calls in flight, though every client left
        release.set()
        # The slots come back when the runs end: a new stream is then admitted.
        deadline = time.monotonic() + 30
        while (status := hang_up_after_the_first_byte(base, "later")) == 429 and time.monotonic() < deadline:
            time.sleep(0.1)
        assert status == 200
        stored = httpx.get(f"{base.removesuffix('/ag-ui')}/threads/t0/messages", headers=AUTH).json()["messages"]
        assert [m["role"] for m in stored] == ["user", "assistant"]  # the detached run finished and was saved

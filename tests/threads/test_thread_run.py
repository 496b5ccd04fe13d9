"""A stored thread's run across a checkpoint: the checkpoint's partial copy gives way to the answer."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

import httpx

from chatgate.config import Config
from chatgate.threads.run import CHECKPOINT_SECONDS
from tests.conftest import make_config

Serve = Callable[[Config], str]


def test_a_run_that_outlives_a_checkpoint_ends_as_its_answer_alone(serve: Serve, store_url: str) -> None:
    # Long enough to be checkpointed mid-run; its finish must then clear the partial copy (a run never
    # checkpointed skips that step).
    words = " ".join(f"w{n}" for n in range(int(CHECKPOINT_SECONDS / 0.05) + 15))
    agent = {"model": "builtin:echo", "conversations": "server", "model_settings": {"delay": 0.05}}
    url = serve(make_config({"bot": agent}, store={"url": store_url}))
    message = {"id": "u1", "role": "user", "parts": [{"type": "text", "text": words}]}
    streamed = threading.Thread(
        target=lambda: httpx.post(f"{url}/agents/bot/chat", json={"id": "c1", "message": message}, timeout=30)
    )
    streamed.start()
    seen_partial = False
    deadline = time.monotonic() + 20
    while streamed.is_alive() and time.monotonic() < deadline:
        read = httpx.get(f"{url}/agents/bot/threads/c1/messages")
        if read.status_code == 200:  # a 404 until the thread is created
            statuses = [m.get("metadata", {}).get("chatgate", {}).get("status") for m in read.json()["messages"]]
            seen_partial = seen_partial or "partial" in statuses
        time.sleep(0.1)
    streamed.join()
    assert seen_partial, "no checkpoint was seen while the run streamed"
    stored = httpx.get(f"{url}/agents/bot/threads/c1/messages").json()["messages"]
    assert [(m["role"], m.get("metadata")) for m in stored] == [("user", None), ("assistant", None)]
    assert words in stored[1]["parts"][-1]["text"]

"""kill -9 of ``chatgate serve`` mid-stream: the thread keeps the user message and the partial answer."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx

from chatgate.history import AssistantMessage, UserMessage
from chatgate.store import open_store


async def _stored(store_url: str) -> list[Any]:
    store = await open_store(store_url, Path.cwd())
    try:
        thread = await store.get_thread("", "bot", "c1")
        assert thread is not None
        return await store.messages(thread)
    finally:
        await store.close()


def test_kill_9_mid_stream_leaves_the_partial_answer(
    chatgate_process: Callable[..., tuple[str, Any]], store_url: str, tmp_path: Path
) -> None:
    config = tmp_path / "chatgate.toml"
    config.write_text(
        f'[store]\nurl = "{store_url}"\n\n'
        '[agents.bot]\nmodel = "builtin:echo"\nconversations = "server"\n'
        "model_settings = { delay = 0.1 }\n"
    )
    url, process = chatgate_process("--config", str(config))
    words = " ".join(f"word{n}" for n in range(200))
    body = {"id": "c1", "message": {"id": "u1", "role": "user", "parts": [{"type": "text", "text": words}]}}
    deltas = 0
    with httpx.stream("POST", f"{url}/agents/bot/chat", json=body, timeout=30) as response:
        assert response.status_code == 200
        started = time.monotonic()
        for line in response.iter_lines():
            deltas += '"text-delta"' in line
            if time.monotonic() - started > 3.5:  # past several checkpoints
                break
        process.kill()  # SIGKILL: no shutdown, no final save
        process.wait(timeout=10)
    stored = asyncio.run(_stored(store_url))
    assert [(type(m.message), m.status) for m in stored] == [(UserMessage, "complete"), (AssistantMessage, "partial")]
    saved = stored[1].message.text
    assert saved.startswith("System prompt: (none)")
    streamed_words = deltas
    assert 0 < len(saved.split()) <= streamed_words + 1  # at most what was streamed, never more
    assert len(saved.split()) >= streamed_words - 15  # at most ~1.5 s (one checkpoint interval) lost

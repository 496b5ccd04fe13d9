"""Shared pieces of the usage and budget tests: a fake OpenAI upstream that reports usage, requests, keys."""

from __future__ import annotations

import json
import time
from typing import Any

import httpx

from tests.providers.fakes import Reply, openai_chunk, sse_data

DONE = b"data: [DONE]\n\n"

# Every answer reports 100 prompt tokens (40 of them cached) and 20 completion tokens (5 reasoning).
USAGE = {
    "prompt_tokens": 100,
    "completion_tokens": 20,
    "total_tokens": 120,
    "prompt_tokens_details": {"cached_tokens": 40},
    "completion_tokens_details": {"reasoning_tokens": 5},
}
# [pricing."model-x"]: $1 per million input tokens, $0.10 per million cached, $2 per million output.
PRICING = {"model-x": {"input_usd_per_mtok": 1.0, "cached_input_usd_per_mtok": 0.1, "output_usd_per_mtok": 2.0}}
COST = (60 * 1.0 + 40 * 0.1 + 20 * 2.0) / 1_000_000

SECRETS = {"admin": "admin-secret-0123456789", "k1": "k1-secret-0123456789ab", "k2": "k2-secret-0123456789ab"}


def answer(text: str = "Hello there.", *, usage: dict[str, Any] | None = USAGE) -> Reply:
    """A whole OpenAI answer; its usage chunk only when ``usage`` is given."""
    body: list[bytes | float] = [openai_chunk({"content": text}), openai_chunk({}, "stop")]
    if usage is not None:
        body.append(sse_data({"id": "c", "object": "chat.completion.chunk", "choices": [], "usage": usage}))
    return Reply([*body, DONE])


def keys(**extra: Any) -> list[dict[str, Any]]:
    """An admin key, k1 (a trusted backend naming people) and k2."""
    return [
        {"id": "admin", "key": SECRETS["admin"], "admin": True},
        {"id": "k1", "key": SECRETS["k1"], "trusted_user_header": True, **extra.get("k1", {})},
        {"id": "k2", "key": SECRETS["k2"], **extra.get("k2", {})},
    ]


def headers(key: str, user: str | None = None) -> dict[str, str]:
    out = {"authorization": f"Bearer {SECRETS[key]}"}
    if user is not None:
        out["x-chatgate-user"] = user
    return out


def chat(url: str, key: str, user: str | None = None, *, agent: str = "bot") -> httpx.Response:
    """One useChat request with the whole history; the response read to its end."""
    body = {
        "id": "chat-1",
        "messages": [{"id": "u1", "role": "user", "parts": [{"type": "text", "text": "Hi"}]}],
        "trigger": "submit-message",
    }
    return httpx.post(f"{url}/agents/{agent}/chat", json=body, headers=headers(key, user), timeout=30)


def chunks(response: httpx.Response) -> list[dict[str, Any]]:
    lines = [line[len("data: ") :] for line in response.text.splitlines() if line.startswith("data: ")]
    return [json.loads(line) for line in lines if line != "[DONE]"]


def wait_for_runs(url: str, runs: int) -> None:
    """Wait until the ledger holds ``runs`` runs (rows are written just after each run's last event)."""
    deadline = time.monotonic() + 15
    while True:
        rows = httpx.get(f"{url}/usage", params={"group_by": ""}, headers=headers("admin")).json()["rows"]
        if sum(row["runs"] for row in rows) >= runs:
            return
        assert time.monotonic() < deadline, rows
        time.sleep(0.02)

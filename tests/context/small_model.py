"""A fake llama.cpp ``llama-server`` with a small context per slot, over real HTTP.

It counts a request's prompt as its characters over ``CHARS_PER_TOKEN`` (3, so chatgate's estimate
of 4 must learn from the reported counts) plus 4 a message, answers ``GET /props`` with its ``n_ctx``,
refuses a prompt over ``n_ctx`` minus the answer's ``max_tokens`` with llama.cpp's own 400
``exceed_context_size_error`` body, and otherwise answers a short text, reporting the prompt's tokens
in the usage chunk as llama.cpp does.
"""

from __future__ import annotations

import json
from typing import Any

from tests.providers.fakes import FakeUpstream, Recorded, Reply, openai_chunk, openai_usage

__all__ = ["CHARS_PER_TOKEN", "SmallModel"]

CHARS_PER_TOKEN = 3


class SmallModel(FakeUpstream):
    """See the module docstring. ``prompts`` holds each chat request's counted prompt tokens."""

    def __init__(self, n_ctx: int, answer: str = "Noted.") -> None:
        super().__init__()
        self.n_ctx = n_ctx
        self.answer = answer
        self.prompts: list[int] = []
        self.refused = 0

    @property
    def chats(self) -> list[Recorded]:
        """The chat requests (not ``/props``)."""
        return [request for request in self.requests if request.path.endswith("/chat/completions")]

    async def reply_to(self, request: Recorded) -> Reply:
        if request.path == "/props":
            props = {"default_generation_settings": {"n_ctx": self.n_ctx}, "total_slots": 1}
            return Reply([json.dumps(props).encode()], headers={"content-type": "application/json"})
        tokens = prompt_tokens(request.body)
        self.prompts.append(tokens)
        answer_room = request.body.get("max_tokens") or 0
        if tokens + answer_room > self.n_ctx:
            self.refused += 1
            error = {
                "code": 400,
                "message": f"request ({tokens} tokens) exceeds the available context size ({self.n_ctx} tokens)",
                "type": "exceed_context_size_error",
                "n_prompt_tokens": tokens,
                "n_ctx": self.n_ctx,
            }
            return Reply(
                [json.dumps({"error": error}).encode()], status=400, headers={"content-type": "application/json"}
            )
        return Reply(
            [
                openai_chunk({"content": self.answer}),
                openai_chunk({}, "stop"),
                openai_usage(tokens, 3),
                b"data: [DONE]\n\n",
            ]
        )


def prompt_tokens(body: Any) -> int:
    """The fake's count of a Chat Completions request's prompt."""
    total = 0
    for message in body["messages"]:
        content = message.get("content") or ""
        text = content if isinstance(content, str) else json.dumps(content)
        total += len(text) // CHARS_PER_TOKEN + 4
        if message.get("tool_calls"):
            total += len(json.dumps(message["tool_calls"])) // CHARS_PER_TOKEN
    if body.get("tools"):
        total += len(json.dumps(body["tools"])) // CHARS_PER_TOKEN
    return total

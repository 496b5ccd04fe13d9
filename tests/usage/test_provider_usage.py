"""Each provider's own usage report becomes one ``Usage`` (cached and reasoning counts when sent), and a
provider that reports none yields none: never a guess of 0. Real providers against a fake upstream."""

from __future__ import annotations

from typing import Any

from chatgate.events import Usage
from chatgate.history import TextPart, UserMessage
from tests.providers.fakes import FakeUpstream, Reply, anthropic_event, ndjson
from tests.providers.support import stream_once
from tests.usage.support import USAGE, answer

HI = (UserMessage((TextPart("Hi"),)),)


async def _usage(kind: str, reply: Reply) -> list[Any]:
    async with FakeUpstream(reply) as fake:
        events = await stream_once(kind, fake.url, HI)
    return [event for event in events if isinstance(event, Usage)]


async def test_openai_details_are_kept_and_a_stream_without_usage_reports_none() -> None:
    assert await _usage("openai", answer(usage=USAGE)) == [Usage(100, 20, reasoning_tokens=5, cached_input_tokens=40)]
    assert await _usage("openai", answer(usage={"prompt_tokens": 7, "completion_tokens": 2})) == [Usage(7, 2)]
    assert await _usage("openai", answer(usage=None)) == []


async def test_anthropic_cache_reads_and_writes_are_cached_and_cache_write_input_tokens() -> None:
    usage = {"input_tokens": 5, "cache_read_input_tokens": 90, "cache_creation_input_tokens": 5}
    reply = Reply(
        [
            anthropic_event("message_start", message={"id": "msg_1", "usage": usage}),
            anthropic_event("content_block_start", index=0, content_block={"type": "text", "text": ""}),
            anthropic_event("content_block_delta", index=0, delta={"type": "text_delta", "text": "Hi"}),
            anthropic_event("content_block_stop", index=0),
            anthropic_event("message_delta", delta={"stop_reason": "end_turn"}, usage={"output_tokens": 3}),
            anthropic_event("message_stop"),
        ]
    )
    # input_tokens counts every prompt token (AG-UI's accounting): the cache's reads and writes are parts of it
    assert await _usage("anthropic", reply) == [Usage(100, 3, cached_input_tokens=90, cache_write_input_tokens=5)]


async def test_an_ollama_answer_without_counts_reports_none() -> None:
    reply = Reply(
        [
            ndjson({"message": {"role": "assistant", "content": "Hi"}, "done": False}),
            ndjson({"message": {"role": "assistant", "content": ""}, "done": True, "done_reason": "stop"}),
        ],
        headers={"content-type": "application/x-ndjson"},
    )
    assert await _usage("ollama", reply) == []

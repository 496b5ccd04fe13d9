"""Every upstream's way of saying "the prompt is too long" ends the run with ``context_length_exceeded``."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import replace

import httpx
import pytest

from chatgate.config import Config
from chatgate.events import RunFailed
from chatgate.history import TextPart, UserMessage
from chatgate.providers.refusals import CONTEXT_FULL, CONTEXT_LENGTH_EXCEEDED
from tests.conftest import make_config
from tests.providers.fakes import FakeUpstream, Reply, anthropic_event, fake_in_thread, openai_chunk, sse_data
from tests.providers.support import provider_table, run_events

Serve = Callable[[Config], str]
HELLO = (UserMessage((TextPart("Hello"),)),)
FULL = RunFailed(CONTEXT_FULL, code=CONTEXT_LENGTH_EXCEEDED)


def refused(body: str, status: int = 400) -> Reply:
    return Reply([body.encode()], status=status, headers={"content-type": "application/json"})


OPENAI = refused(
    '{"error": {"message": "This model\'s maximum context length is 8192 tokens. However, your messages resulted'
    ' in 9120 tokens. Please reduce the length of the messages.", "type": "invalid_request_error",'
    ' "param": "messages", "code": "context_length_exceeded"}}'
)
LLAMA_CPP = refused(
    '{"error":{"code":400,"message":"the request exceeds the available context size, try increasing it",'
    '"type":"exceed_context_size_error","n_prompt_tokens":1207,"n_ctx":1024}}'
)
VLLM = refused(
    '{"object":"error","message":"This model\'s maximum context length is 4096 tokens. However, you requested'
    " 4597 tokens (4085 in the messages, 512 in the completion). Please reduce the length of the messages or"
    ' completion.","type":"BadRequestError","param":null,"code":400}'
)
ANTHROPIC = refused(
    '{"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: 208310 tokens >'
    ' 200000 maximum"},"request_id":"req_011CSHoEeqs5C35K2UUqR7Fy"}'
)
OLLAMA = refused('{"error":"the input length exceeds the context length"}')
LLAMA_CPP_MID_STREAM = Reply(
    [
        sse_data(
            {
                "error": {
                    "code": 400,
                    "message": "the request exceeds the available context size, try increasing it",
                    "type": "exceed_context_size_error",
                }
            }
        )
    ]
)
ANTHROPIC_ERROR_EVENT = Reply(
    [
        anthropic_event("message_start", message={"id": "msg_1", "usage": {"input_tokens": 5}}),
        anthropic_event(
            "error", error={"type": "invalid_request_error", "message": "prompt is too long: 201000 tokens > 200000"}
        ),
    ]
)


@pytest.mark.parametrize(
    ("kind", "reply"),
    [
        ("openai", OPENAI),
        ("openai", LLAMA_CPP),
        ("openai", VLLM),
        ("openai", LLAMA_CPP_MID_STREAM),
        ("anthropic", ANTHROPIC),
        ("anthropic", ANTHROPIC_ERROR_EVENT),
        ("ollama", OLLAMA),
    ],
    ids=["openai", "llama.cpp", "vllm", "llama.cpp-mid-stream", "anthropic", "anthropic-event", "ollama"],
)
async def test_a_length_refusal_is_named_for_what_it_is(kind: str, reply: Reply) -> None:
    async with FakeUpstream(reply) as fake:
        events = await run_events(kind, fake.url, HELLO)
    assert len(fake.requests) == 1
    failed = events[-1]
    assert isinstance(failed, RunFailed)
    assert replace(failed, usage=()) == FULL  # Anthropic's refusal in its stream counts what it reported first


async def test_any_other_refusal_stays_generic() -> None:
    async with FakeUpstream(refused('{"error": {"message": "Invalid model", "code": "model_not_found"}}')) as fake:
        events = await run_events("openai", fake.url, HELLO)
    assert events[-1] == RunFailed("The model provider rejected the request.", code="model_error")


async def test_a_finished_answer_mentioning_the_words_is_just_an_answer() -> None:
    words = "Your prompt is too long: exceed_context_size_error."
    answer = Reply([openai_chunk({"content": words}), openai_chunk({}, "stop"), b"data: [DONE]\n\n"])
    async with FakeUpstream(answer) as fake:
        events = await run_events("openai", fake.url, HELLO)
    assert not any(isinstance(event, RunFailed) for event in events)


def test_both_protocols_get_the_code_and_the_advice(serve: Serve) -> None:
    with fake_in_thread(LLAMA_CPP) as fake:
        config = make_config(
            {"bot": {"model": "up:m", "default": True}}, providers={"up": provider_table("openai", fake.url)}
        )
        url = serve(config)
        ag_ui = {"threadId": "t", "runId": "r", "messages": [{"id": "u1", "role": "user", "content": "hi"}]}
        events = [json.loads(line[6:]) for line in httpx.post(f"{url}/ag-ui", json=ag_ui).text.split("\n") if line]
        message = {"id": "u1", "role": "user", "parts": [{"type": "text", "text": "hi"}]}
        use_chat = httpx.post(f"{url}/api/chat", json={"id": "c", "messages": [message]}).text
    assert len(fake.requests) == 2
    assert events[-1] == {"type": "RUN_ERROR", "message": CONTEXT_FULL, "code": CONTEXT_LENGTH_EXCEEDED}
    frames = [json.loads(line[6:]) for line in use_chat.split("\n") if line.startswith("data: {")]
    assert {"type": "error", "errorText": CONTEXT_FULL} in frames


def test_strategy_fail_ends_both_protocols_with_the_code_before_any_model_call(serve: Serve) -> None:
    with fake_in_thread(LLAMA_CPP) as fake:
        agent = {"model": "up:m", "default": True, "context": {"window": 200, "strategy": "fail"}}
        url = serve(make_config({"bot": agent}, providers={"up": provider_table("openai", fake.url)}))
        long = "word " * 400
        ag_ui = {"threadId": "t", "runId": "r", "messages": [{"id": "u1", "role": "user", "content": long}]}
        events = [json.loads(line[6:]) for line in httpx.post(f"{url}/ag-ui", json=ag_ui).text.split("\n") if line]
        message = {"id": "u1", "role": "user", "parts": [{"type": "text", "text": long}]}
        use_chat = httpx.post(f"{url}/api/chat", json={"id": "c", "messages": [message]}).text
    assert fake.requests == []
    assert events[-1] == {"type": "RUN_ERROR", "message": CONTEXT_FULL, "code": CONTEXT_LENGTH_EXCEEDED}
    frames = [json.loads(line[6:]) for line in use_chat.split("\n") if line.startswith("data: {")]
    assert {"type": "error", "errorText": CONTEXT_FULL} in frames

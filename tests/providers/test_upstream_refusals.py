"""An upstream that refuses: its error text is logged without our secrets, and a long Retry-After ends at once."""

import json
import logging
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime

import httpx
import pytest

from chatgate.config import Config, ProviderConfig, ProviderTimeouts
from chatgate.events import RunFailed
from chatgate.history import AssistantMessage, TextPart, ToolCallPart, ToolMessage, UserMessage
from chatgate.providers.http import MAX_RETRY_AFTER, Upstream
from chatgate.run.runner import run_agent
from chatgate.run_input import RunInput
from tests.conftest import make_config
from tests.providers.fakes import FakeUpstream, Reply, fake_in_thread, text_reply
from tests.providers.support import agent_on, collect, provider, provider_table, stream_once

KEY = "sk-live-0123456789abcdefSECRET"
HEADER_SECRET = "org-token-9876543210"
KINDS = ["openai", "anthropic", "ollama"]
HELLO = (UserMessage((TextPart("Hello"),)),)
Serve = Callable[[Config], str]
RATE_LIMITED = RunFailed("The model provider is rate limiting requests; try again later.", code="model_error")


def quoting(status: int, body: str, **headers: str) -> Reply:
    return Reply([body.encode()], status=status, headers={"content-type": "application/json", **headers})


async def run_logged(kind: str, url: str, caplog: pytest.LogCaptureFixture, **table: object) -> list[object]:
    with caplog.at_level(logging.DEBUG):
        async with provider(kind, url, **table) as model:
            return list(await collect(run_agent(agent_on(model), RunInput(HELLO))))


def all_log_text(caplog: pytest.LogCaptureFixture) -> str:
    return "\n".join(record.getMessage() + str(record.exc_info or "") for record in caplog.records)


@pytest.mark.parametrize("kind", KINDS)
async def test_a_401_quoting_the_api_key_logs_it_redacted(kind: str, caplog: pytest.LogCaptureFixture) -> None:
    body = f'{{"error": {{"message": "Incorrect API key provided: {KEY}. Header was {HEADER_SECRET}."}}}}'
    async with FakeUpstream(quoting(401, body)) as fake:
        events = await run_logged(kind, fake.url, caplog, api_key=KEY, headers={"x-org": HEADER_SECRET})
    assert fake.requests, "the upstream was called"
    assert events[-1] == RunFailed("The model provider rejected the request.", code="model_error")
    logged = all_log_text(caplog)
    assert "HTTP 401" in logged and "[redacted]" in logged
    assert KEY not in logged and HEADER_SECRET not in logged


async def test_a_key_straddling_the_excerpts_end_leaves_no_part_of_itself(caplog: pytest.LogCaptureFixture) -> None:
    body = "x" * 490 + KEY + "y" * 100
    async with FakeUpstream(quoting(401, body)) as fake:
        await run_logged("openai", fake.url, caplog, api_key=KEY)
    logged = all_log_text(caplog)
    assert KEY[:10] not in logged


async def test_retried_failures_are_redacted_in_the_retry_warning_too(caplog: pytest.LogCaptureFixture) -> None:
    async with FakeUpstream(quoting(503, f'{{"error": "busy, {KEY}"}}'), text_reply("openai", "ok")) as fake:
        await run_logged("openai", fake.url, caplog, api_key=KEY, retries=1)
    assert len(fake.requests) == 2
    assert "retrying" in all_log_text(caplog) and KEY not in all_log_text(caplog)


def test_short_header_values_are_not_treated_as_secrets() -> None:
    config = ProviderConfig(kind="openai", api_key=KEY, headers={"x-org": HEADER_SECRET, "x-version": "2024"})
    upstream = Upstream.from_config(None, "up", config, url="http://x", headers={})  # type: ignore[arg-type]
    assert upstream.redact(f"{KEY} {HEADER_SECRET} version 2024") == "[redacted] [redacted] version 2024"


@pytest.mark.parametrize(
    "retry_after",
    [
        str(int(MAX_RETRY_AFTER) + 1),
        "3600",
        "inf",
        format_datetime(datetime.now(UTC) + timedelta(hours=1), usegmt=True),
    ],
    ids=["just-over", "an-hour", "inf", "an-http-date"],  # stable ids: pytest-xdist workers compare them
)
async def test_a_retry_after_longer_than_we_wait_ends_the_run_at_once(
    retry_after: str, caplog: pytest.LogCaptureFixture
) -> None:
    async with FakeUpstream(quoting(429, '{"error": "slow down"}', **{"retry-after": retry_after})) as fake:
        started = time.monotonic()
        events = await run_logged("openai", fake.url, caplog, retries=2)
        elapsed = time.monotonic() - started
    assert len(fake.requests) == 1
    assert events[-1] == RATE_LIMITED
    assert elapsed < 1.5, elapsed  # not the old behaviour, which slept 0.5 s then 1 s before giving up
    assert "longer than we wait" in all_log_text(caplog)


async def test_a_short_retry_after_is_still_waited_for_and_retried() -> None:
    async with FakeUpstream(quoting(429, "{}", **{"retry-after": "0.2"}), text_reply("openai", "ok")) as fake:
        started = time.monotonic()
        await stream_once("openai", fake.url, HELLO, retries=1)
    assert len(fake.requests) == 2
    assert time.monotonic() - started >= 0.5  # the larger of Retry-After and the backoff


def test_the_default_idle_timeout_is_30_seconds() -> None:
    assert ProviderTimeouts().idle == 30.0
    assert Upstream(None, "up", "http://x").idle_timeout == 30.0  # type: ignore[arg-type]


@pytest.mark.parametrize("kind", ["anthropic", "ollama", "openai"])
async def test_non_finite_tool_arguments_in_history_reach_the_upstream_as_json(kind: str) -> None:
    call = ToolCallPart("c1", "f", '{"x": NaN, "y": 1e400, "z": 1}')
    history = (*HELLO, AssistantMessage((call,)), ToolMessage("c1", "done"), UserMessage((TextPart("and?"),)))
    async with FakeUpstream(text_reply(kind, "ok")) as fake:
        await stream_once(kind, fake.url, history)
    (request,) = fake.requests

    def refuse(constant: str) -> None:
        raise AssertionError(f"a bare {constant} in the {kind} request body")

    json.loads(request.raw, parse_constant=refuse)


@pytest.mark.parametrize("route", ["/api/chat", "/ag-ui"])
def test_a_long_retry_after_ends_the_stream_in_protocol_at_once(serve: Serve, route: str) -> None:
    with fake_in_thread(quoting(429, '{"error": "slow down"}', **{"retry-after": "3600"})) as fake:
        table = provider_table("openai", fake.url, retries=2)
        url = serve(make_config({"bot": {"model": "up:m", "default": True}}, providers={"up": table}))
        if route == "/ag-ui":
            message = {"id": "u", "role": "user", "content": "hi"}
            body: dict[str, object] = {"threadId": "t", "runId": "r", "messages": [message]}
        else:
            body = {"id": "c", "messages": [{"id": "u", "role": "user", "parts": [{"type": "text", "text": "hi"}]}]}
        started = time.monotonic()
        response = httpx.post(f"{url}{route}", json=body, timeout=10)
        elapsed = time.monotonic() - started
    assert len(fake.requests) == 1
    assert elapsed < 1.5, elapsed  # no backoff slept (0.5 s, then 1 s)
    frames = [json.loads(f[6:]) for f in response.text.split("\n\n") if f.startswith("data: {")]
    if route == "/ag-ui":
        assert frames[-1] == {"type": "RUN_ERROR", "message": RATE_LIMITED.message, "code": "model_error"}
    else:
        assert {"type": "error", "errorText": RATE_LIMITED.message} in frames
        assert frames[-1]["type"] == "finish" and response.text.endswith("data: [DONE]\n\n")

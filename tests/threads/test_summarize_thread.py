"""``strategy = "summarize"`` on a server-held thread: one summary call, stored, sent after the system prompt.

The fake model counts a prompt's tokens as ``SmallModel`` does and answers the summary call (known by
its instruction) with a numbered summary, or refuses it, so each test counts the summary calls made and
reads what the model received on the turns after one.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest

from chatgate.config import Config
from chatgate.context.summary import SUMMARY_INSTRUCTION, SUMMARY_REQUEST
from tests.conftest import make_config
from tests.context.small_model import SmallModel, prompt_tokens
from tests.providers.fakes import Recorded, Reply, fake_in_thread, openai_chunk, openai_usage
from tests.providers.support import provider_table
from tests.telemetry.test_metrics import samples, value
from tests.threads.replay_flows import events_of

Serve = Callable[[Config], str]
PROMPT = "Be terse."
FILLER = "The quick brown fox jumps over the lazy dog while the cat watches from the fence. " * 3
SUMMARY_TOKENS = 17


class SummarizingModel(SmallModel):
    """``SmallModel``, answering a summary call with ``SUMMARY-N ...`` (or a 400 when ``refuse_summaries``)."""

    def __init__(self, *, refuse_summaries: bool = False) -> None:
        super().__init__(n_ctx=1024)
        self.refuse_summaries = refuse_summaries
        self.summaries: list[Recorded] = []

    @property
    def answers(self) -> list[Recorded]:
        """The chat requests that are not summary calls: one per answered turn."""
        return [request for request in self.chats if request not in self.summaries]

    async def reply_to(self, request: Recorded) -> Reply:
        messages = request.body.get("messages") if isinstance(request.body, dict) else None
        if not messages or not str(messages[-1].get("content")).endswith(SUMMARY_INSTRUCTION):
            return await super().reply_to(request)
        self.summaries.append(request)
        if self.refuse_summaries:
            error = json.dumps({"error": {"message": "summaries are off today", "type": "invalid_request_error"}})
            return Reply([error.encode()], status=400, headers={"content-type": "application/json"})
        text = f"SUMMARY-{len(self.summaries)}: a person sent numbered turns about a fox."
        usage = openai_usage(prompt_tokens(request.body), SUMMARY_TOKENS)
        return Reply([openai_chunk({"content": text}), openai_chunk({}, "stop"), usage, b"data: [DONE]\n\n"])


def _config(fake: SmallModel, store_url: str) -> Config:
    agent = {
        "model": "up:m",
        "conversations": "server",
        "system_prompt": PROMPT,
        "model_settings": {"max_tokens": 64},
        "context": {"window": 1024, "strategy": "summarize"},
    }
    providers = {"up": provider_table("openai", f"{fake.url}/v1")}
    return make_config({"bot": agent}, providers=providers, store={"url": store_url})


def _say(url: str, n: int) -> list[dict[str, Any]]:
    message = {"id": f"u{n}", "role": "user", "parts": [{"type": "text", "text": f"Turn {n}. {FILLER}"}]}
    response = httpx.post(f"{url}/agents/bot/chat", json={"id": "c1", "message": message}, timeout=30)
    assert response.status_code == 200, response.text
    return events_of(response.content)


def _answered(events: list[dict[str, Any]]) -> bool:
    return events[-1]["type"] == "finish" and not any(event["type"] == "error" for event in events)


def _sent(request: Recorded) -> list[tuple[str, str]]:
    return [(message["role"], message["content"]) for message in request.body["messages"]]


def test_a_summary_is_written_once_stored_and_sent_after_the_system_prompt(
    serve: Serve, store_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    fake = SummarizingModel()
    with fake_in_thread(fake=fake), caplog.at_level(logging.INFO, "chatgate"):
        url = serve(_config(fake, store_url))
        turns = [_say(url, n) for n in range(1, 21)]
        described = httpx.get(f"{url}/agents/bot/threads/c1").json()
        found = samples(url)
        # Another app on the same store (a restart, another replica) reads the stored summary.
        written = len(fake.summaries)
        turn_20 = fake.answers[-1]
        before = len(fake.chats)
        again = serve(_config(fake, store_url))
        assert _answered(_say(again, 21))
        after_reload = fake.chats[before]
    assert all(_answered(events) for events in turns)
    # 21 turns answered; a new app estimates from scratch, so its first prompt may be refused once.
    assert len(fake.answers) == 21 + fake.refused and fake.refused <= 1
    assert written >= 2 and len(fake.summaries) == written  # it outgrew its first summary; the new app wrote none

    # Each summary call is one user message: the turns it folds in as a transcript (after the previous
    # summary), then the instruction; never the system prompt.
    (first,), (second,) = _sent(fake.summaries[0]), _sent(fake.summaries[1])
    assert first[0] == "user" and first[1].startswith("Conversation:\nUser: Turn 1.")
    assert first[1].count("User: Turn 1.") == 1 and first[1].endswith(f"\n\n{SUMMARY_INSTRUCTION}")
    assert second[1].startswith("Summary of what came before:\nSUMMARY-1:")
    assert not any(PROMPT in content for request in fake.summaries for _, content in _sent(request))

    # The turn after a summary: the system prompt, the summary as a question and its answer, the kept turns.
    index = fake.chats.index(fake.summaries[0])
    (role, content), *rest = _sent(fake.chats[index + 1])
    assert (role, content) == ("system", PROMPT)
    assert rest[0] == ("user", SUMMARY_REQUEST) and rest[1][0] == "assistant" and rest[1][1].startswith("SUMMARY-1:")
    assert rest[2][0] == "user" and rest[2][1].startswith("Turn ") and not rest[2][1].startswith("Turn 1.")
    assert [role for role, _ in rest] == ["user", "assistant"] * (len(rest) // 2) + ["user"]
    last = _sent(turn_20)
    assert last[2][1].startswith(f"SUMMARY-{written}:") and last[-1][1].startswith("Turn 20.")

    # The summary's tokens count in the turn's usage: the answer's 3 plus the summary's.
    folded = [n for n, events in enumerate(turns) if events[-1].get("messageMetadata", {}).get("usage")]
    usages = [turns[n][-1]["messageMetadata"]["usage"]["outputTokens"] for n in folded]
    assert usages.count(3 + SUMMARY_TOKENS) == written and usages.count(3) == 20 - written

    # Stored once per fold, visible (what it covers, never the text) and kept across a new app.
    summary = described["summary"]
    assert summary["messages"] > 0 and summary["tokens"] == SUMMARY_TOKENS and summary["model"] == "up:m"
    stored = httpx.get(f"{url}/agents/bot/threads/c1/messages").json()["messages"]
    assert [m["role"] for m in stored] == ["user", "assistant"] * 21  # nothing deleted
    assert stored[summary["messages"] - 1]["id"] == summary["through"]
    assert _sent(after_reload)[2][1].startswith(f"SUMMARY-{written}:")  # read from the store by the new app

    labels = {"agent": "bot", "strategy": "summarize"}
    assert value(found, "chatgate_context_summaries_total", **labels, outcome="written") == written
    lines = [record.getMessage() for record in caplog.records if "summarized" in record.getMessage()]
    assert len([line for line in lines if "into about" in line]) == len(fake.summaries)
    assert "fox" not in "".join(lines) and "SUMMARY" not in "".join(lines)  # counts, never content

    # A reset forgets the summary with the messages.
    reset = httpx.post(f"{url}/agents/bot/threads/c1/reset", json={})
    assert reset.status_code == 200 and reset.json()["summary"] is None


def test_a_failed_summary_leaves_turns_out_as_drop_oldest(
    serve: Serve, store_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    fake = SummarizingModel(refuse_summaries=True)
    with fake_in_thread(fake=fake), caplog.at_level(logging.INFO, "chatgate"):
        url = serve(_config(fake, store_url))
        turns = [_say(url, n) for n in range(1, 14)]
        described = httpx.get(f"{url}/agents/bot/threads/c1").json()
        found = samples(url)
    assert all(_answered(events) for events in turns)
    assert fake.summaries and len(fake.answers) == 13 and fake.refused == 0
    # Each turn over the budget asked once, and then went on without: the oldest turns left out, no summary.
    after = fake.chats[fake.chats.index(fake.summaries[0]) + 1]
    sent = _sent(after)
    assert sent[0] == ("system", PROMPT) and sent[1][0] == "user" and sent[1][1].startswith("Turn ")
    assert not any(content in (SUMMARY_REQUEST,) or content.startswith("Turn 1.") for _, content in sent)
    assert described["summary"] is None
    failed = value(found, "chatgate_context_summaries_total", agent="bot", strategy="summarize", outcome="failed")
    assert failed == len(fake.summaries)
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING and "summary" in r.getMessage()]
    assert len(warnings) == len(fake.summaries) and "fox" not in "".join(warnings)


def test_a_summary_model_on_another_upstream_writes_the_summaries(serve: Serve, tmp_path: Path) -> None:
    answering, summarizing = SmallModel(n_ctx=1024), SummarizingModel()
    with fake_in_thread(fake=answering), fake_in_thread(fake=summarizing):
        providers = {
            "up": provider_table("openai", f"{answering.url}/v1"),
            "notes": provider_table("openai", f"{summarizing.url}/v1"),
        }
        agent = {
            "model": "up:m",
            "conversations": "server",
            "system_prompt": PROMPT,
            "model_settings": {"max_tokens": 64},
            "context": {"window": 1024, "strategy": "summarize", "summary_model": "notes:small"},
        }
        url = serve(make_config({"bot": agent}, providers=providers, store={"url": f"sqlite:///{tmp_path / 't.db'}"}))
        turns = [_say(url, n) for n in range(1, 14)]
        described = httpx.get(f"{url}/agents/bot/threads/c1").json()
    assert all(_answered(events) for events in turns)
    # Every summary call went to the summary model's upstream, and it answered nothing else.
    assert summarizing.summaries and summarizing.chats == summarizing.summaries
    assert all(request.body["model"] == "small" for request in summarizing.summaries)
    assert len(answering.chats) == 13 + answering.refused
    assert not any(SUMMARY_INSTRUCTION in _sent(request)[-1][1] for request in answering.chats)
    assert described["summary"]["model"] == "notes:small"
    assert _sent(answering.chats[-1])[2][1].startswith(f"SUMMARY-{len(summarizing.summaries)}:")

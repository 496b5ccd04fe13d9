"""Cited sources: Anthropic ``citations`` and OpenAI ``url_citation`` annotations, to both protocols and the store.

Each source reaches useChat as ``source-url`` / ``source-document`` chunks that every ``ai`` major's
chunk schema accepts (tests/clients/vercel_ai_run.mjs) and AG-UI as a ``CUSTOM`` ``source`` event that
``@ag-ui/client`` validates; a stored thread keeps them as message parts, so ``GET .../messages`` and an
AG-UI hydrate's snapshot show them again; a source cited twice in one answer is reported once.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import ExitStack
from dataclasses import dataclass
from typing import Any

import httpx
import pytest

from chatgate.events import SourceCited
from chatgate.history import AssistantMessage, SourcePart, TextPart, UserMessage
from chatgate.providers.anthropic import encode_messages
from chatgate.store.codec import decode_message, encode_message
from chatgate.threads.journal import decode_record, encode_event
from chatgate.web.app import create_app
from tests.conftest import LiveServer, make_config, run_node_client
from tests.providers.fakes import (
    FakeUpstream,
    Reply,
    anthropic_event,
    fake_in_thread,
    openai_chunk,
    openai_usage,
)
from tests.providers.support import provider_table, stream_once

PAGE = "https://example.com/sky"
WEB_CITATION = {
    "type": "web_search_result_location",
    "url": PAGE,
    "title": "Why the sky is blue",
    "cited_text": "Rayleigh scattering",
    "encrypted_index": "EoA",
}
DOCUMENT_CITATION = {
    "type": "char_location",
    "document_index": 0,
    "document_title": "Terms",
    "cited_text": "blue",
    "start_char_index": 0,
    "end_char_index": 4,
}


def anthropic_cited() -> Reply:
    def delta(**fields: Any) -> bytes:
        return anthropic_event("content_block_delta", index=0, delta=fields)

    return Reply(
        [
            anthropic_event("message_start", message={"id": "msg_1", "usage": {"input_tokens": 5}}),
            anthropic_event("content_block_start", index=0, content_block={"type": "text", "text": ""}),
            delta(type="citations_delta", citation=WEB_CITATION),
            delta(type="text_delta", text="The sky is blue."),
            delta(type="citations_delta", citation={**WEB_CITATION, "cited_text": "again"}),  # the same page
            delta(type="citations_delta", citation=DOCUMENT_CITATION),
            delta(type="citations_delta", citation={"type": "a_newer_kind"}),
            anthropic_event("content_block_stop", index=0),
            anthropic_event("message_delta", delta={"stop_reason": "end_turn"}, usage={"output_tokens": 4}),
            anthropic_event("message_stop"),
        ]
    )


def openai_cited() -> Reply:
    annotation = {"type": "url_citation", "url_citation": {"url": PAGE, "title": "Sky", "start_index": 0}}
    return Reply(
        [
            openai_chunk({"role": "assistant", "content": "The sky is blue."}),
            openai_chunk({"annotations": [annotation, annotation]}),
            openai_chunk({}, "stop"),
            openai_usage(5, 4),
            b"data: [DONE]\n\n",
        ]
    )


@dataclass
class Site:
    url: str
    fakes: dict[str, FakeUpstream]


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Site]:
    with ExitStack() as stack:
        fakes = {
            "anthropic": stack.enter_context(fake_in_thread(anthropic_cited())),
            "openai": stack.enter_context(fake_in_thread(openai_cited())),
        }
        config = make_config(
            {
                "anthropic": {"model": "up-anthropic:m", "default": True, "vercel_ai_version": "v5"},
                "openai": {"model": "up-openai:m", "vercel_ai_version": "v7"},
                "kept": {"model": "up-anthropic:m", "conversations": "server", "vercel_ai_version": "v7"},
            },
            providers={f"up-{kind}": provider_table(kind, fake.url) for kind, fake in fakes.items()},
            store={"url": f"sqlite:///{tmp_path_factory.mktemp('sources') / 'chatgate.db'}"},
        )
        server = LiveServer(create_app(config))
        server.start()
        try:
            yield Site(server.url, fakes)
        finally:
            server.stop()


def use_chat(site: Site, agent: str, version: int, chat_id: str = "c1") -> dict[str, Any]:
    body = {"id": chat_id, "messages": [{"id": "u1", "role": "user", "parts": [{"type": "text", "text": "Why?"}]}]}
    request = {
        "url": f"{site.url}/agents/{agent}/chat",
        "version": version,
        "body": {**body, "trigger": "submit-message"},
    }
    result: dict[str, Any] = run_node_client("vercel_ai_run.mjs", request)
    return result


def ag_ui(site: Site, agent: str, thread_id: str = "t1", message_id: str = "u1") -> dict[str, Any]:
    messages = [{"id": message_id, "role": "user", "content": "Why?"}]
    request = {"url": f"{site.url}/agents/{agent}/ag-ui", "input": {"threadId": thread_id, "messages": messages}}
    result: dict[str, Any] = run_node_client("ag_ui_run.mjs", request)
    return result


def without_ids(parts: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{k: v for k, v in part.items() if k != "sourceId"} for part in parts if part["type"].startswith("source")]


ANTHROPIC_UI_SOURCES = [
    {"type": "source-url", "url": PAGE, "title": "Why the sky is blue"},
    {"type": "source-document", "mediaType": "text/plain", "title": "Terms"},
]


@pytest.mark.parametrize("version", [5, 6, 7])
def test_anthropic_citations_reach_use_chat_as_source_parts(site: Site, version: int) -> None:
    result = use_chat(site, "anthropic", version)
    assert without_ids(result["chunks"]) == ANTHROPIC_UI_SOURCES  # the page cited twice: once
    assert without_ids(result["message"]["parts"]) == ANTHROPIC_UI_SOURCES
    ids = [part["sourceId"] for part in result["chunks"] if part["type"].startswith("source")]
    assert len(set(ids)) == 2


def test_openai_url_citations_reach_use_chat_as_one_source_url(site: Site) -> None:
    result = use_chat(site, "openai", 7)
    assert without_ids(result["chunks"]) == [{"type": "source-url", "url": PAGE, "title": "Sky"}]


@pytest.mark.parametrize("agent", ["anthropic", "openai"])
def test_citations_reach_ag_ui_as_custom_source_events(site: Site, agent: str) -> None:
    result = ag_ui(site, agent)
    custom = [event for event in result["events"] if event["type"] == "CUSTOM"]
    assert {event["name"] for event in custom} == {"source"}
    text_id = next(event["messageId"] for event in result["events"] if event["type"] == "TEXT_MESSAGE_START")
    values = [{k: v for k, v in event["value"].items() if k != "sourceId"} for event in custom]
    page = {"sourceType": "url", "url": PAGE, "messageId": text_id}
    if agent == "openai":
        assert values == [{**page, "title": "Sky"}]
    else:
        document = {"sourceType": "document", "title": "Terms", "mediaType": "text/plain", "messageId": text_id}
        assert values == [{**page, "title": "Why the sky is blue"}, document]


def test_a_stored_thread_keeps_its_sources(site: Site) -> None:
    calls = len(site.fakes["anthropic"].bodies)
    use_chat(site, "kept", 7, chat_id="kept-1")
    stored = httpx.get(f"{site.url}/agents/kept/threads/kept-1/messages").json()["messages"]
    assert without_ids(stored[-1]["parts"]) == ANTHROPIC_UI_SOURCES
    for version in (5, 6, 7):  # what a reload loads passes each major's validateUIMessages
        messages_url = f"{site.url}/agents/kept/threads/kept-1/messages"
        request = {"url": f"{site.url}/agents/kept/chat", "version": version, "chatId": "kept-1", "steps": []}
        loaded = run_node_client("vercel_ai_thread.mjs", {**request, "messagesUrl": messages_url})["loaded"]
        assert without_ids(loaded[-1]["parts"]) == ANTHROPIC_UI_SOURCES
    # An AG-UI thread's hydrate (a request adding nothing) shows them in the snapshot's metadata.
    ag_ui(site, "kept", thread_id="kept-2")
    hydrate = ag_ui(site, "kept", thread_id="kept-2")
    snapshot = next(event for event in hydrate["events"] if event["type"] == "MESSAGES_SNAPSHOT")
    assistant = next(m for m in snapshot["messages"] if m["role"] == "assistant")
    assert [s["title"] for s in assistant["metadata"]["sources"]] == ["Why the sky is blue", "Terms"]
    assert len(site.fakes["anthropic"].bodies) == calls + 2  # the hydrate called no model
    # Sources are never sent back to a model.
    assert "Terms" not in str(
        encode_messages((AssistantMessage((TextPart("x"), SourcePart("s", PAGE, "Terms"))),), "up")
    )


async def test_anthropic_citations_on_a_starting_block_and_openai_flat_annotations() -> None:
    start = {"type": "text", "text": "", "citations": [DOCUMENT_CITATION, {**DOCUMENT_CITATION, "document_index": 1}]}
    reply = Reply(
        [
            anthropic_event("message_start", message={"id": "m", "usage": {"input_tokens": 1}}),
            anthropic_event("content_block_start", index=0, content_block=start),
            anthropic_event("content_block_stop", index=0),
            anthropic_event("message_delta", delta={"stop_reason": "end_turn"}, usage={"output_tokens": 1}),
            anthropic_event("message_stop"),
        ]
    )
    question = (UserMessage((TextPart("Why?"),)),)
    async with FakeUpstream(reply) as fake:
        events = await stream_once("anthropic", fake.url, question)
    titles = [event.title for event in events if isinstance(event, SourceCited)]
    assert titles == ["Terms", "Terms"]  # two documents of one title: two sources
    flat = {"type": "url_citation", "url": PAGE, "title": "Flat"}
    reply = Reply([openai_chunk({"annotations": [flat, {"type": "file_citation"}]}), openai_chunk({}, "stop")])
    async with FakeUpstream(reply) as fake:
        events = await stream_once("openai", fake.url, question)
    assert [(e.url, e.title) for e in events if isinstance(e, SourceCited)] == [(PAGE, "Flat")]


def test_a_source_survives_the_run_journal_and_the_store_codec() -> None:
    event = SourceCited("src_1", url=PAGE, title="Sky")
    assert decode_record(encode_event(event)) == event  # a dead producer's turn is rebuilt with it
    document = SourcePart("src_2", None, "Terms", "text/plain", "terms.txt")
    message = AssistantMessage((TextPart("Blue."), document), id="a1")
    assert decode_message(*encode_message(message), "a1") == message

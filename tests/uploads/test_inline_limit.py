"""``[files] max_inline_bytes_per_call``: one model call carries a bounded number of upload bytes.

On a live chatgate over SQLite and PostgreSQL with a fake OpenAI-compatible upstream that counts what it
received: a request whose newest message references one upload 99 times is refused 413 before any
model call (useChat and AG-UI, stateless and stored threads), and a history whose references pass the
limit sends the newest within it and a short text for the older ones. A run's ``FileInliner`` reads
no byte of a call over the limit, and each file once however many steps and references.
"""

from __future__ import annotations

import asyncio
import io
import json
import secrets
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from chatgate.errors import RequestError
from chatgate.files import FileInliner, FileStore, StoredFile, file_path
from chatgate.history import FilePart, TextPart, UserMessage
from chatgate.store import open_store
from chatgate.web.app import create_app
from tests.conftest import LiveServer, make_config
from tests.providers.fakes import FakeUpstream, fake_in_thread, text_reply
from tests.providers.support import provider_table
from tests.store.conftest import new_store_url

ALICE = {"authorization": "Bearer alice-key-0123456789"}
FILE_BYTES = 1000
LIMIT = 2500  # two references of the file fit one call, a third does not
DATA_URL = "data:image/png;base64,"
LEFT_OUT = "is left out here: newer attachments fill this request."


@dataclass
class Site:
    url: str
    fake: FakeUpstream


@pytest.fixture(scope="module", params=["sqlite", "postgres"])
def site(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Site]:
    store = new_store_url(request, tmp_path_factory.mktemp("uploads"))
    with fake_in_thread(text_reply("openai", "Seen.")) as fake:
        config = make_config(
            {
                "plain": {"model": "up:model-x", "default": True},
                "kept": {"model": "up:model-x", "conversations": "server"},
            },
            providers={"up": provider_table("openai", fake.url)},
            store={"url": store},
            files={"max_bytes": 1024, "max_inline_bytes_per_call": LIMIT, "allowed_types": ["image/*"]},
            keys=[{"id": "alice", "key": "alice-key-0123456789"}],
        )
        server = LiveServer(create_app(config))
        server.start()
        try:
            yield Site(server.url, fake)
        finally:
            server.stop()


def upload(site: Site, agent: str) -> str:
    files = {"file": ("pic.png", secrets.token_bytes(FILE_BYTES), "image/png")}
    response = httpx.post(f"{site.url}/agents/{agent}/files", files=files, headers=ALICE)
    assert response.status_code == 201, response.text
    url: str = response.json()["url"]
    return url


def chat_message(message_id: str, urls: list[str]) -> dict[str, Any]:
    files = [{"type": "file", "mediaType": "image/png", "url": url} for url in urls]
    return {"id": message_id, "role": "user", "parts": [{"type": "text", "text": "Look."}, *files]}


def ag_ui_message(message_id: str, urls: list[str]) -> dict[str, Any]:
    images = [{"type": "image", "source": {"type": "file", "value": url.rsplit("/", 1)[1]}} for url in urls]
    return {"id": message_id, "role": "user", "content": [{"type": "text", "text": "Look."}, *images]}


def use_chat(site: Site, agent: str, messages: list[dict[str, Any]], chat_id: str = "c") -> httpx.Response:
    body = {"id": chat_id, "messages": messages, "trigger": "submit-message"}
    return httpx.post(f"{site.url}/agents/{agent}/chat", json=body, headers=ALICE, timeout=30)


def ag_ui(site: Site, agent: str, messages: list[dict[str, Any]], thread: str = "t") -> httpx.Response:
    body = {"threadId": thread, "runId": f"r-{secrets.token_hex(4)}", "messages": messages, "tools": [], "context": []}
    return httpx.post(f"{site.url}/agents/{agent}/ag-ui", json=body, headers=ALICE, timeout=30)


def refused(response: httpx.Response) -> None:
    assert response.status_code == 413, response.text
    error = response.json()["error"]
    assert error["code"] == "inline_limit_exceeded"
    assert f"more than the {LIMIT} bytes" in error["message"] and "max_inline_bytes_per_call" in error["message"]


@pytest.mark.parametrize("agent", ["plain", "kept"])
def test_99_references_to_one_upload_are_refused_before_any_model_call(site: Site, agent: str) -> None:
    url = upload(site, agent)
    calls = len(site.fake.bodies)
    refused(use_chat(site, agent, [chat_message("u1", [url] * 99)], chat_id=f"c-{secrets.token_hex(4)}"))
    refused(ag_ui(site, agent, [ag_ui_message("u1", [url] * 99)], thread=f"t-{secrets.token_hex(4)}"))
    # Counted per reference: three of one file are over the limit as surely as three files.
    refused(use_chat(site, agent, [chat_message("u1", [url] * 3)], chat_id=f"c-{secrets.token_hex(4)}"))
    assert len(site.fake.bodies) == calls
    # Two fit: both reach the model, each as the bytes.
    assert use_chat(site, agent, [chat_message("u1", [url] * 2)], chat_id=f"c-{secrets.token_hex(4)}").is_success
    assert len(site.fake.bodies) == calls + 1
    assert json.dumps(site.fake.bodies[-1]).count(DATA_URL) == 2


def sent_to_model(site: Site) -> tuple[int, int]:
    """The data URLs and left-out notes of the last model call."""
    last = json.dumps(site.fake.bodies[-1])
    return last.count(DATA_URL), last.count(LEFT_OUT)


def test_a_stateless_history_over_the_limit_sends_the_newest_and_notes_the_rest(site: Site) -> None:
    url = upload(site, "plain")
    answer = {"id": "a", "role": "assistant", "parts": [{"type": "text", "text": "Seen."}]}
    history = [chat_message("u1", [url]), answer, chat_message("u2", [url]), answer, chat_message("u3", [url])]
    assert use_chat(site, "plain", history).is_success
    assert sent_to_model(site) == (2, 1)
    first = json.dumps(site.fake.bodies[-1]["messages"][0])  # the oldest message: its file noted by name
    assert f"[The attached file 'pic.png' {LEFT_OUT}]" in first and DATA_URL not in first

    reply = {"id": "a", "role": "assistant", "content": "Seen."}
    ag_history = [ag_ui_message("u1", [url] * 2), reply, ag_ui_message("u2", [url])]
    assert ag_ui(site, "plain", ag_history).is_success
    assert sent_to_model(site) == (2, 1)


def test_a_stored_thread_sends_its_newest_references_within_the_limit(site: Site) -> None:
    url = upload(site, "kept")
    chat_id = f"c-{secrets.token_hex(4)}"
    for turn in range(1, 4):
        assert use_chat(site, "kept", [chat_message(f"u{turn}", [url])], chat_id).is_success
    assert sent_to_model(site) == (2, 1)  # the third turn: its own file and the second's; the first's noted
    thread = f"t-{secrets.token_hex(4)}"
    for turn in range(1, 3):
        assert ag_ui(site, "kept", [ag_ui_message(f"u{turn}", [url, url])], thread).is_success
    assert sent_to_model(site) == (2, 2)
    # The thread keeps every reference: the notes are only in what the model was sent.
    stored = httpx.get(f"{site.url}/agents/kept/threads/{chat_id}/messages", headers=ALICE).json()["messages"]
    assert [p["url"] for m in stored for p in m["parts"] if p["type"] == "file"] == [url] * 3


class CountingFileStore(FileStore):
    """The real file store, counting the reads of a file's bytes."""

    reads = 0

    async def get(self, owner: str, agent: str, file_id: str) -> StoredFile | None:
        self.reads += 1
        return await super().get(owner, agent, file_id)


def test_a_model_call_reads_each_file_once_and_none_when_over_the_limit(tmp_path: Path) -> None:
    """What a run's ``FileInliner`` does (a limit lowered by a reload after the request was let in)."""

    async def check() -> None:
        store = await open_store(f"sqlite:///{tmp_path / 'files.db'}", tmp_path)
        try:
            files = CountingFileStore(store.engine)
            record = await files.put("o", "a", "image/png", "p.png", io.BytesIO(b"x" * 1000), 1000)
            part = FilePart("image/png", file_path("a", record.id), "p.png")
            over = UserMessage((TextPart("Look."), *[part] * 99), id="u1")
            with pytest.raises(RequestError) as caught:
                await FileInliner(files, "o", "a", 2500).inline((over,))
            assert (caught.value.status, caught.value.code) == (413, "inline_limit_exceeded")
            assert files.reads == 0
            # A history of five references: the two newest inlined from one read, three noted.
            history = tuple(UserMessage((part,), id=f"u{n}") for n in range(5))
            inliner = FileInliner(files, "o", "a", 2500)
            for _ in range(3):  # every step of a run
                sent = await inliner.inline(history)
            assert files.reads == 1
            kinds = [type(message.parts[0]).__name__ for message in sent if isinstance(message, UserMessage)]
            assert kinds == ["TextPart"] * 3 + ["FilePart"] * 2
        finally:
            await store.close()

    asyncio.run(check())

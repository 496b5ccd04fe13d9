"""Uploads (``/agents/{agent}/files``) on a live chatgate over SQLite and PostgreSQL, and references to them.

One server per store kind, with an agent on each fake upstream (OpenAI-compatible, Anthropic, Ollama)
and two keys: an upload referenced from AG-UI (``FileSource``) and from useChat (the upload's URL)
reaches each upstream as the bytes it expects, a stored thread keeps the reference (and the next turn
sends the bytes again), another owner's id is a 404 everywhere, and bad uploads are 413/415/422.
"""

from __future__ import annotations

import base64
import secrets
from collections.abc import Iterator
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from chatgate.config import load_config
from chatgate.errors import ConfigError
from chatgate.web.app import create_app
from tests.conftest import LiveServer, make_config, run_node_client
from tests.providers.fakes import FakeUpstream, fake_in_thread, text_reply
from tests.providers.support import provider_table
from tests.providers.test_files_upstream import IMAGE_IN_ITS_FORM, PNG, QUESTION
from tests.store.conftest import new_store_url

ALICE = {"authorization": "Bearer alice-key-0123456789"}
BOB = {"authorization": "Bearer bob-key-0123456789ab"}
PNG_BYTES = base64.b64decode(PNG)
PDF_BYTES = b"%PDF-1.4\n%%EOF\n"
KINDS = ("openai", "anthropic", "ollama")


@dataclass
class Site:
    url: str
    fakes: dict[str, FakeUpstream]


@pytest.fixture(scope="module", params=["sqlite", "postgres"])
def site(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Site]:
    store = new_store_url(request, tmp_path_factory.mktemp("uploads"))
    with ExitStack() as stack:
        fakes = {kind: stack.enter_context(fake_in_thread(text_reply(kind, "A red dot."))) for kind in KINDS}
        config = make_config(
            {kind: {"model": f"up-{kind}:model-x", "default": kind == "openai"} for kind in KINDS}
            | {"kept": {"model": "up-anthropic:model-x", "conversations": "server"}},
            providers={f"up-{kind}": provider_table(kind, fake.url) for kind, fake in fakes.items()},
            store={"url": store},
            files={"max_bytes": 1024, "allowed_types": ["image/*", "application/pdf"]},
            keys=[{"id": "alice", "key": "alice-key-0123456789"}, {"id": "bob", "key": "bob-key-0123456789ab"}],
        )
        server = LiveServer(create_app(config))
        server.start()
        try:
            yield Site(server.url, fakes)
        finally:
            server.stop()


def upload(site: Site, agent: str, headers: dict[str, str] = ALICE) -> dict[str, Any]:
    files = {"file": ("dot.png", PNG_BYTES, "image/png")}
    response = httpx.post(f"{site.url}/agents/{agent}/files", files=files, headers=headers)
    assert response.status_code == 201, response.text
    body: dict[str, Any] = response.json()
    return body


def error_of(response: httpx.Response) -> tuple[int, str]:
    return response.status_code, response.json()["error"]["code"]


def ag_ui(site: Site, agent: str, messages: list[dict[str, Any]], **extra: Any) -> dict[str, Any]:
    request = {"url": f"{site.url}/agents/{agent}/ag-ui", "headers": ALICE, "input": {"messages": messages, **extra}}
    result: dict[str, Any] = run_node_client("ag_ui_run.mjs", request)
    return result


def use_chat(site: Site, agent: str, messages: list[dict[str, Any]], chat_id: str = "chat-1") -> dict[str, Any]:
    body = {"id": chat_id, "messages": messages, "trigger": "submit-message"}
    request = {"url": f"{site.url}/agents/{agent}/chat", "version": 7, "body": body, "headers": ALICE}
    result: dict[str, Any] = run_node_client("vercel_ai_run.mjs", request)
    return result


def test_an_upload_is_kept_listed_downloaded_and_deleted(site: Site) -> None:
    png = upload(site, "openai")
    assert png["url"] == f"/agents/openai/files/{png['id']}"
    assert (png["mediaType"], png["size"], png["name"]) == ("image/png", len(PNG_BYTES), "dot.png")
    raw = httpx.post(
        f"{site.url}/agents/openai/files?name=terms.pdf",
        content=PDF_BYTES,
        headers={**ALICE, "content-type": "application/pdf"},
    )
    assert raw.status_code == 201
    assert (raw.json()["mediaType"], raw.json()["name"]) == ("application/pdf", "terms.pdf")

    download = httpx.get(site.url + png["url"], headers=ALICE)
    assert download.content == PNG_BYTES
    assert download.headers["content-type"] == "image/png"
    assert download.headers["content-disposition"].startswith("attachment;")
    listed = httpx.get(f"{site.url}/agents/openai/files", headers=ALICE).json()["files"]
    assert {png["id"], raw.json()["id"]} <= {f["id"] for f in listed}

    assert httpx.delete(site.url + png["url"], headers=ALICE).status_code == 204
    assert error_of(httpx.get(site.url + png["url"], headers=ALICE)) == (404, "unknown_file")
    assert error_of(httpx.delete(site.url + png["url"], headers=ALICE)) == (404, "unknown_file")


def test_another_owners_file_is_404_and_reaches_no_model(site: Site) -> None:
    png = upload(site, "openai")
    assert error_of(httpx.get(site.url + png["url"], headers=BOB)) == (404, "unknown_file")
    assert error_of(httpx.delete(site.url + png["url"], headers=BOB)) == (404, "unknown_file")
    assert png["id"] not in str(httpx.get(f"{site.url}/agents/openai/files", headers=BOB).json())
    assert httpx.get(site.url + png["url"]).status_code == 401
    calls = len(site.fakes["openai"].bodies)
    image = {"type": "image", "source": {"type": "file", "value": png["id"]}}
    ag_ui_body = {"threadId": "t", "runId": "r", "messages": [user_ag_ui(image)], "tools": [], "context": []}
    refused = httpx.post(f"{site.url}/agents/openai/ag-ui", json=ag_ui_body, headers=BOB)
    assert error_of(refused) == (404, "unknown_file")
    file_part = {"type": "file", "mediaType": "image/png", "url": site.url + png["url"]}
    chat_body = {"id": "c", "messages": [user_use_chat(file_part)], "trigger": "submit-message"}
    assert error_of(httpx.post(f"{site.url}/agents/openai/chat", json=chat_body, headers=BOB)) == (404, "unknown_file")
    # Scoped by agent too: the owner's own upload on another agent is none of this one's.
    other = {"type": "file", "mediaType": "image/png", "url": f"/agents/anthropic/files/{png['id']}"}
    chat_body = {"id": "c", "messages": [user_use_chat(other)], "trigger": "submit-message"}
    assert error_of(httpx.post(f"{site.url}/agents/openai/chat", json=chat_body, headers=ALICE)) == (
        404,
        "unknown_file",
    )
    assert len(site.fakes["openai"].bodies) == calls
    # The owner's own request still works, and the file is still there.
    assert httpx.get(site.url + png["url"], headers=ALICE).content == PNG_BYTES


def test_oversized_wrong_type_and_malformed_uploads_are_refused(site: Site) -> None:
    base = f"{site.url}/agents/openai/files"
    big = httpx.post(base, files={"file": ("big.png", b"\0" * 1025, "image/png")}, headers=ALICE)
    assert error_of(big) == (413, "file_too_large")
    big_raw = httpx.post(base, content=b"\0" * 1025, headers={**ALICE, "content-type": "image/png"})
    assert error_of(big_raw) == (413, "file_too_large")
    text = httpx.post(base, files={"file": ("a.txt", b"hello", "text/plain")}, headers=ALICE)
    assert error_of(text) == (415, "unsupported_file_type")
    assert error_of(httpx.post(base, content=b"hello", headers=ALICE)) == (415, "unsupported_media_type")
    two = [("a", ("a.png", PNG_BYTES, "image/png")), ("b", ("b.png", PNG_BYTES, "image/png"))]
    assert error_of(httpx.post(base, files=two, headers=ALICE)) == (422, "invalid_multipart")
    garbled = httpx.post(base, content=b"--x\r\nnonsense", headers={**ALICE, "content-type": "multipart/form-data"})
    assert error_of(garbled) == (422, "invalid_multipart")
    fields_only = httpx.post(base, data={"note": "no file"}, files={}, headers=ALICE)
    assert fields_only.status_code in (415, 422)
    assert error_of(httpx.post(base, content=b"", headers={**ALICE, "content-type": "image/png"})) == (
        422,
        "empty_file",
    )
    assert not [f for f in httpx.get(base, headers=ALICE).json()["files"] if f["name"] in ("big.png", "a.txt")]


def user_ag_ui(*parts: dict[str, Any]) -> dict[str, Any]:
    return {"id": "u1", "role": "user", "content": [{"type": "text", "text": QUESTION}, *parts]}


def user_use_chat(*parts: dict[str, Any], message_id: str = "u1") -> dict[str, Any]:
    return {"id": message_id, "role": "user", "parts": [{"type": "text", "text": QUESTION}, *parts]}


@pytest.mark.parametrize("kind", KINDS)
def test_an_ag_ui_file_source_reaches_each_upstream_as_bytes(site: Site, kind: str) -> None:
    png = upload(site, kind)
    calls = len(site.fakes[kind].bodies)
    image = {"type": "image", "source": {"type": "file", "value": png["id"], "provider": "chatgate"}}
    result = ag_ui(site, kind, [user_ag_ui(image)])
    assert result["messages"][-1]["content"] == "A red dot."
    assert len(site.fakes[kind].bodies) == calls + 1
    assert site.fakes[kind].bodies[-1]["messages"][-1] == IMAGE_IN_ITS_FORM[kind]


@pytest.mark.parametrize("kind", KINDS)
def test_a_use_chat_file_part_with_the_upload_url_reaches_each_upstream_as_bytes(site: Site, kind: str) -> None:
    png = upload(site, kind)
    calls = len(site.fakes[kind].bodies)
    file_part = {"type": "file", "mediaType": "image/png", "url": site.url + png["url"]}
    result = use_chat(site, kind, [user_use_chat(file_part)])
    assert [p["text"] for p in result["message"]["parts"] if p["type"] == "text"] == ["A red dot."]
    assert len(site.fakes[kind].bodies) == calls + 1
    assert site.fakes[kind].bodies[-1]["messages"][-1] == IMAGE_IN_ITS_FORM[kind]


def test_a_stored_thread_keeps_the_reference_and_sends_the_bytes_each_turn(site: Site) -> None:
    png = upload(site, "kept")
    fake = site.fakes["anthropic"]
    calls = len(fake.bodies)
    chat_id = f"c-{secrets.token_hex(4)}"
    use_chat(site, "kept", [user_use_chat({"type": "file", "mediaType": "image/png", "url": png["url"]})], chat_id)
    stored = httpx.get(f"{site.url}/agents/kept/threads/{chat_id}/messages", headers=ALICE).json()["messages"]
    file_parts = [p for p in stored[0]["parts"] if p["type"] == "file"]
    assert file_parts == [{"type": "file", "mediaType": "image/png", "url": png["url"], "filename": "dot.png"}]
    # The next turn sends only its own message: the model gets the stored turn's bytes again.
    second = {"id": "u2", "role": "user", "parts": [{"type": "text", "text": "And now?"}]}
    use_chat(site, "kept", [second], chat_id)
    assert len(fake.bodies) == calls + 2
    assert fake.bodies[-1]["messages"][0] == IMAGE_IN_ITS_FORM["anthropic"]
    # Deleted since: the history says so in its place instead of failing the turn.
    assert httpx.delete(site.url + png["url"], headers=ALICE).status_code == 204
    use_chat(site, "kept", [{"id": "u3", "role": "user", "parts": [{"type": "text", "text": "Still?"}]}], chat_id)
    first = fake.bodies[-1]["messages"][0]["content"]
    assert first[1] == {"type": "text", "text": "[The attached file 'dot.png' is no longer available.]"}


def test_an_ag_ui_thread_gives_the_file_source_back_in_its_snapshot(site: Site) -> None:
    png = upload(site, "kept")
    calls = len(site.fakes["anthropic"].bodies)
    image = {"type": "image", "source": {"type": "file", "value": png["id"]}}  # no mimeType: the upload's
    thread = f"t-{secrets.token_hex(4)}"
    ag_ui(site, "kept", [user_ag_ui(image)], threadId=thread)
    hydrate = ag_ui(site, "kept", [user_ag_ui(image)], threadId=thread)  # adds nothing: a hydrate
    snapshot = next(event for event in hydrate["events"] if event["type"] == "MESSAGES_SNAPSHOT")
    source = {"type": "file", "value": png["id"], "provider": "chatgate", "mimeType": "image/png"}
    assert snapshot["messages"][0]["content"][1] == {"type": "image", "source": source}
    assert len(site.fakes["anthropic"].bodies) == calls + 1
    assert site.fakes["anthropic"].bodies[-1]["messages"][0] == IMAGE_IN_ITS_FORM["anthropic"]
    # An id that is no upload's, named as chatgate's, is a 404 too.
    bad = {"type": "image", "source": {"type": "file", "value": "nonsense", "provider": "chatgate"}}
    body = {"threadId": "t", "runId": "r", "messages": [user_ag_ui(bad)], "tools": [], "context": []}
    assert error_of(httpx.post(f"{site.url}/agents/openai/ag-ui", json=body, headers=ALICE)) == (404, "unknown_file")


def test_without_a_store_uploads_are_501(tmp_path: Path) -> None:
    server = LiveServer(create_app(make_config({"a": {"model": "builtin:echo"}})))
    server.start()
    try:
        response = httpx.post(f"{server.url}/agents/a/files", content=PNG_BYTES, headers={"content-type": "image/png"})
        assert error_of(response) == (501, "no_file_store")
        image = {"type": "image", "source": {"type": "file", "value": "file_" + "0" * 24}}
        body = {"threadId": "t", "runId": "r", "messages": [user_ag_ui(image)], "tools": [], "context": []}
        assert error_of(httpx.post(f"{server.url}/agents/a/ag-ui", json=body)) == (422, "no_file_store")
    finally:
        server.stop()


def test_check_config_names_a_bad_files_table(tmp_path: Path) -> None:
    path = tmp_path / "c.toml"
    agents = '[agents.a]\nmodel = "builtin:echo"\n'
    path.write_text(agents + '[files]\nmax_bytes = 0\nallowed_types = ["Image/PNG", "pdf"]\n')
    with pytest.raises(ConfigError) as caught:
        load_config(path)
    problems = "\n".join(caught.value.problems)
    assert "files.max_bytes" in problems and "files.allowed_types" in problems
    assert "'Image/PNG', 'pdf'" in problems
    path.write_text(agents + "[files]\nmax_bytes = 100\n")  # valid, but nowhere to keep uploads
    with pytest.raises(ConfigError) as caught:
        load_config(path)
    assert caught.value.problems == ["files: uploads are kept in the store, and none is configured; set [store] url"]
    path.write_text(agents + '[files]\nmax_bytes = 100\n[store]\nurl = "sqlite:///c.db"\n')
    assert load_config(path).files.max_bytes == 100

"""Uploads on a live chatgate over SQLite and PostgreSQL: media types by RFC 9110, and uploads in flight.

A part or body whose type is no ``type/subtype`` (a control character, a list) is 415 and kept nowhere;
``image/*`` matches the parsed type exactly; a row kept before the check downloads as plain bytes. Uploads
held open (a body that has not finished arriving) count against ``[files] max_uploads_in_flight_per_key``
(429) and ``max_uploads_in_flight`` (503), each with ``Retry-After``, and free their slot when they end.
"""

from __future__ import annotations

import asyncio
import io
import socket
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

import httpx
import pytest

from chatgate.files import FileStore
from chatgate.store import open_store
from chatgate.web.app import create_app
from tests.conftest import LiveServer, make_config
from tests.store.conftest import new_store_url

KEYS = {name: f"{name}-key-0123456789" for name in ("alice", "bob", "carol")}
PNG = b"\x89PNG\r\n\x1a\n" + b"\0" * 64


@dataclass
class Site:
    url: str
    store: str


def auth(name: str) -> dict[str, str]:
    return {"authorization": f"Bearer {KEYS[name]}"}


@pytest.fixture(scope="module", params=["sqlite", "postgres"])
def site(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Site]:
    store = new_store_url(request, tmp_path_factory.mktemp("uploads"))
    config = make_config(
        {"a": {"model": "builtin:echo"}},
        store={"url": store},
        files={
            "max_bytes": 4096,
            "allowed_types": ["image/*"],
            "max_uploads_in_flight": 2,
            "max_uploads_in_flight_per_key": 1,
        },
        keys=[{"id": name, "key": key} for name, key in KEYS.items()],
    )
    server = LiveServer(create_app(config))
    server.start()
    try:
        yield Site(server.url, store)
    finally:
        server.stop()


def multipart(part_type: bytes) -> tuple[bytes, dict[str, str]]:
    """A multipart body of one file part whose ``content-type`` is ``part_type``, byte for byte."""
    body = (
        b'--b0undary\r\ncontent-disposition: form-data; name="file"; filename="x.png"\r\n'
        b"content-type: " + part_type + b"\r\n\r\n" + PNG + b"\r\n--b0undary--\r\n"
    )
    return body, {"content-type": "multipart/form-data; boundary=b0undary"}


def post(site: Site, body: bytes, headers: dict[str, str], who: str = "alice") -> httpx.Response:
    return httpx.post(f"{site.url}/agents/a/files", content=body, headers={**auth(who), **headers})


def listed(site: Site) -> int:
    return len(httpx.get(f"{site.url}/agents/a/files", headers=auth("alice")).json()["files"])


@pytest.mark.parametrize(
    "part_type", [b"image/png\x01", b"image/png,text/html", b"image/png, text/html", b"image/", b"image/png x"]
)
def test_a_part_whose_type_is_no_media_type_is_415_and_kept_nowhere(site: Site, part_type: bytes) -> None:
    before = listed(site)
    response = post(site, *multipart(part_type))
    assert response.status_code == 415, response.text
    assert response.json()["error"]["code"] == "invalid_media_type"
    assert listed(site) == before


@pytest.mark.parametrize("content_type", ["image/png,text/html", "image/png;;,", "image /png"])
def test_a_body_whose_type_is_no_media_type_is_415(site: Site, content_type: str) -> None:
    response = post(site, PNG, {"content-type": content_type})
    assert (response.status_code, response.json()["error"]["code"]) == (415, "invalid_media_type")


def test_parameters_are_allowed_and_the_type_is_kept_without_them(site: Site) -> None:
    kept = post(site, *multipart(b'IMAGE/PNG; name="dot; png"'))
    assert kept.status_code == 201, kept.text
    assert kept.json()["mediaType"] == "image/png"
    raw = post(site, PNG, {"content-type": "image/webp ; q=1"})
    assert raw.json()["mediaType"] == "image/webp"
    # The allow-list compares the parsed type: text/html is not image/*, whatever follows it.
    refused = post(site, *multipart(b'text/html; x="image/png"'))
    assert (refused.status_code, refused.json()["error"]["code"]) == (415, "unsupported_file_type")


@pytest.mark.parametrize("stored_type", ["image/png\x01", "image/png,text/html", "text/html\r\nx-evil: 1"])
def test_a_row_kept_with_a_bad_type_downloads_as_plain_bytes(site: Site, stored_type: str, tmp_path: Path) -> None:
    async def keep() -> str:
        store = await open_store(site.store, tmp_path)
        try:
            record = await FileStore(store.engine).put("alice", "a", stored_type, "old.png", io.BytesIO(PNG), len(PNG))
        finally:
            await store.close()
        return record.id

    file_id = asyncio.run(keep())
    download = httpx.get(f"{site.url}/agents/a/files/{file_id}", headers=auth("alice"))
    assert download.status_code == 200
    assert download.headers["content-type"] == "application/octet-stream"
    assert download.content == PNG
    assert "x-evil" not in download.headers
    files = httpx.get(f"{site.url}/agents/a/files", headers=auth("alice")).json()["files"]
    assert next(f for f in files if f["id"] == file_id)["mediaType"] == "application/octet-stream"


def held_upload(site: Site, who: str) -> socket.socket:
    """An upload whose head and first bytes are sent and whose body never finishes (until closed)."""
    address = urlsplit(site.url)
    connection = socket.create_connection((address.hostname, address.port))
    head = (
        f"POST /agents/a/files HTTP/1.1\r\nhost: x\r\nauthorization: Bearer {KEYS[who]}\r\n"
        f"content-type: image/png\r\ncontent-length: {len(PNG) + 100}\r\n\r\n"
    )
    connection.sendall(head.encode() + PNG)
    return connection


def refused_once_held(site: Site, who: str, status: int) -> httpx.Response:
    """Upload as ``who`` until the answer is ``status`` (the held uploads are counted once their heads are read)."""
    deadline = time.monotonic() + 30
    while True:
        response = post(site, PNG, {"content-type": "image/png"}, who)
        if response.status_code == status or time.monotonic() > deadline:
            return response
        assert response.status_code == 201, response.text
        time.sleep(0.02)


def test_uploads_in_flight_are_bounded_per_key_and_per_process(site: Site) -> None:
    alice = held_upload(site, "alice")
    try:
        over_key = refused_once_held(site, "alice", 429)
        assert (over_key.status_code, over_key.json()["error"]["code"]) == (429, "too_many_uploads")
        assert over_key.headers["retry-after"] == "1"
        assert "max_uploads_in_flight_per_key" in over_key.json()["error"]["message"]
        bob = held_upload(site, "bob")
        try:
            over_process = refused_once_held(site, "carol", 503)
            assert (over_process.status_code, over_process.json()["error"]["code"]) == (503, "uploads_busy")
            assert over_process.headers["retry-after"] == "1"
        finally:
            bob.close()
        # Alice's held upload ends well: its answer comes, and her slot is free again.
        alice.sendall(b"\0" * 100)
        assert alice.recv(65536).startswith(b"HTTP/1.1 201")
    finally:
        alice.close()
    assert post(site, PNG, {"content-type": "image/png"}, "carol").status_code == 201
    assert post(site, PNG, {"content-type": "image/png"}, "alice").status_code == 201

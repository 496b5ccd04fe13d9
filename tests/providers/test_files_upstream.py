"""User files and images, from a real UI client through a live chatgate to each provider's request body.

An image reaches OpenAI as an ``image_url`` part, Anthropic as an ``image`` block (base64 or url source)
and Ollama as base64 in ``images``; a PDF reaches OpenAI as a ``file`` part and Anthropic as a
``document`` block. A form the provider cannot take ends the run in its protocol, before any upstream
request; an oversized file or a refused URL scheme is a 4xx before the run starts.
"""

from typing import Any

import httpx
import pytest

from tests.conftest import make_config
from tests.providers.fakes import fake_in_thread, text_reply
from tests.providers.support import provider_table
from tests.providers.test_ui_clients import Serve, ag_ui, serve_on, use_chat

PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg=="
PDF = "JVBERi0xLjQKJSVFT0YK"  # "%PDF-1.4\n%%EOF\n"
PNG_URL = f"data:image/png;base64,{PNG}"
PDF_URL = f"data:application/pdf;base64,{PDF}"
REMOTE_IMAGE = "https://images.example/cat.jpg"
REMOTE_PDF = "https://docs.example/terms.pdf"
QUESTION = "What is this?"

IMAGE_IN_ITS_FORM = {
    "openai": {
        "role": "user",
        "content": [{"type": "text", "text": QUESTION}, {"type": "image_url", "image_url": {"url": PNG_URL}}],
    },
    "anthropic": {
        "role": "user",
        "content": [
            {"type": "text", "text": QUESTION},
            {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": PNG}},
        ],
    },
    "ollama": {"role": "user", "content": QUESTION, "images": [PNG]},
}


def ag_ui_user(*parts: dict[str, Any]) -> list[dict[str, Any]]:
    return [{"id": "u1", "role": "user", "content": [{"type": "text", "text": QUESTION}, *parts]}]


def use_chat_user(*parts: dict[str, Any]) -> list[dict[str, Any]]:
    return [{"id": "u1", "role": "user", "parts": [{"type": "text", "text": QUESTION}, *parts]}]


@pytest.mark.parametrize("kind", ["openai", "anthropic", "ollama"])
def test_an_ag_ui_image_part_reaches_each_upstream_in_its_form(serve: Serve, kind: str) -> None:
    image = {"type": "image", "source": {"type": "data", "value": PNG, "mimeType": "image/png"}}
    with fake_in_thread(text_reply(kind, "A red dot.")) as fake:
        result = ag_ui(serve_on(serve, kind, fake.url), ag_ui_user(image))
    assert result["messages"][-1]["content"] == "A red dot."
    assert fake.bodies[0]["messages"][-1] == IMAGE_IN_ITS_FORM[kind]


@pytest.mark.parametrize("kind", ["openai", "anthropic", "ollama"])
def test_a_use_chat_data_url_image_reaches_each_upstream_in_its_form(serve: Serve, kind: str) -> None:
    image = {"type": "file", "mediaType": "image/png", "url": PNG_URL}
    with fake_in_thread(text_reply(kind, "A red dot.")) as fake:
        result = use_chat(serve_on(serve, kind, fake.url), 6, use_chat_user(image))
    assert [p["text"] for p in result["message"]["parts"] if p["type"] == "text"] == ["A red dot."]
    assert fake.bodies[0]["messages"][-1] == IMAGE_IN_ITS_FORM[kind]


def test_a_pre_1_0_binary_image_part_reaches_ollama_as_images(serve: Serve) -> None:
    binary = {"type": "binary", "mimeType": "image/png", "data": PNG, "filename": "dot.png"}
    with fake_in_thread(text_reply("ollama", "A red dot.")) as fake:
        ag_ui(serve_on(serve, "ollama", fake.url), ag_ui_user(binary))
    assert fake.bodies[0]["messages"][-1] == IMAGE_IN_ITS_FORM["ollama"]


def test_a_pdf_reaches_openai_as_a_file_part_with_its_filename(serve: Serve) -> None:
    pdf = {"type": "file", "mediaType": "application/pdf", "url": PDF_URL, "filename": "terms.pdf"}
    with fake_in_thread(text_reply("openai", "Terms.")) as fake:
        use_chat(serve_on(serve, "openai", fake.url), 6, use_chat_user(pdf))
    assert fake.bodies[0]["messages"][-1]["content"][1] == {
        "type": "file",
        "file": {"file_data": PDF_URL, "filename": "terms.pdf"},
    }


def test_a_pdf_reaches_anthropic_as_a_base64_document_block(serve: Serve) -> None:
    document = {"type": "document", "source": {"type": "data", "value": PDF, "mimeType": "application/pdf"}}
    with fake_in_thread(text_reply("anthropic", "Terms.")) as fake:
        ag_ui(serve_on(serve, "anthropic", fake.url), ag_ui_user(document))
    assert fake.bodies[0]["messages"][-1]["content"][1] == {
        "type": "document",
        "source": {"type": "base64", "media_type": "application/pdf", "data": PDF},
    }


@pytest.mark.parametrize(
    ("kind", "expected"),
    [
        ("openai", {"type": "image_url", "image_url": {"url": REMOTE_IMAGE}}),
        ("anthropic", {"type": "image", "source": {"type": "url", "url": REMOTE_IMAGE}}),
    ],
)
def test_an_https_image_url_reaches_the_upstream_as_a_url(serve: Serve, kind: str, expected: dict[str, Any]) -> None:
    image = {"type": "image", "source": {"type": "url", "value": REMOTE_IMAGE, "mimeType": "image/jpeg"}}
    with fake_in_thread(text_reply(kind, "A cat.")) as fake:
        ag_ui(serve_on(serve, kind, fake.url), ag_ui_user(image))
    assert fake.bodies[0]["messages"][-1]["content"][1] == expected


def test_an_https_pdf_url_reaches_anthropic_as_a_url_document_block(serve: Serve) -> None:
    pdf = {"type": "file", "mediaType": "application/pdf", "url": REMOTE_PDF}
    with fake_in_thread(text_reply("anthropic", "Terms.")) as fake:
        use_chat(serve_on(serve, "anthropic", fake.url), 6, use_chat_user(pdf))
    assert fake.bodies[0]["messages"][-1]["content"][1] == {
        "type": "document",
        "source": {"type": "url", "url": REMOTE_PDF},
    }


@pytest.mark.parametrize(
    ("kind", "part", "message"),
    [
        (
            "ollama",
            {"type": "image", "source": {"type": "url", "value": REMOTE_IMAGE, "mimeType": "image/jpeg"}},
            "This model cannot read image/jpeg files sent as a URL.",
        ),
        (
            "ollama",
            {"type": "document", "source": {"type": "data", "value": PDF, "mimeType": "application/pdf"}},
            "This model cannot read application/pdf files sent inline.",
        ),
        (
            "openai",
            {"type": "document", "source": {"type": "url", "value": REMOTE_PDF, "mimeType": "application/pdf"}},
            "This model cannot read application/pdf files sent as a URL.",
        ),
    ],
)
def test_a_file_the_provider_cannot_take_ends_the_ag_ui_run_with_run_error(
    serve: Serve, kind: str, part: dict[str, Any], message: str
) -> None:
    with fake_in_thread(text_reply(kind, "unused")) as fake:
        result = ag_ui(serve_on(serve, kind, fake.url), ag_ui_user(part))
    assert result["events"][-1] == {"type": "RUN_ERROR", "message": message, "code": "model_error"}
    assert fake.requests == []


def test_a_remote_image_ollama_cannot_take_ends_the_use_chat_stream_with_error_and_finish(serve: Serve) -> None:
    image = {"type": "file", "mediaType": "image/jpeg", "url": REMOTE_IMAGE}
    with fake_in_thread(text_reply("ollama", "unused")) as fake:
        result = use_chat(serve_on(serve, "ollama", fake.url), 6, use_chat_user(image))
    assert result["chunks"][-3:] == [
        {"type": "error", "errorText": "This model cannot read image/jpeg files sent as a URL."},
        {"type": "finish-step"},
        {"type": "finish", "finishReason": "error"},
    ]
    assert fake.requests == []


def post_ag_ui(url: str, part: dict[str, Any]) -> httpx.Response:
    body = {"threadId": "t", "runId": "r", "messages": ag_ui_user(part)}
    return httpx.post(url + "/ag-ui", json=body, timeout=10)


def test_a_file_over_max_file_bytes_is_413_before_any_upstream_request(serve: Serve) -> None:
    image = {"type": "image", "source": {"type": "data", "value": PNG, "mimeType": "image/png"}}
    with fake_in_thread(text_reply("openai", "unused")) as fake:
        config = make_config(
            {"helper": {"model": "up:m", "default": True}},
            providers={"up": provider_table("openai", fake.url)},
            server={"max_file_bytes": 32},
        )
        response = post_ag_ui(serve(config), image)
    assert response.status_code == 413
    assert response.json()["error"] == {
        "code": "file_too_large",
        "message": "message 'u1': file 'image/png' is larger than the limit of 32 bytes",
    }
    assert fake.requests == []


def test_a_file_url_scheme_not_allowed_is_422_before_any_upstream_request(serve: Serve) -> None:
    image = {"type": "image", "source": {"type": "url", "value": "file:///etc/passwd", "mimeType": "image/png"}}
    with fake_in_thread(text_reply("openai", "unused")) as fake:
        response = post_ag_ui(serve_on(serve, "openai", fake.url), image)
    assert response.status_code == 422
    assert response.json()["error"]["code"] == "file_url_not_allowed"
    assert "URL scheme 'file:' is not allowed (data:, https:)" in response.json()["error"]["message"]
    assert fake.requests == []

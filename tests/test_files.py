import base64

import pytest

from chatgate.config import ServerSettings
from chatgate.data_urls import data_url_bytes, inline_base64
from chatgate.errors import RequestError
from chatgate.files import check_files
from chatgate.history import FilePart, TextPart, UserMessage

PNG = "data:image/png;base64," + base64.b64encode(b"\x89PNG" + b"\0" * 96).decode()


def with_file(url: str, media_type: str = "image/png") -> list[UserMessage]:
    return [UserMessage((TextPart("look"), FilePart(media_type, url, "pic.png")), id="u1")]


def refusal(messages: list[UserMessage], settings: ServerSettings) -> RequestError:
    with pytest.raises(RequestError) as caught:
        check_files(messages, settings)
    return caught.value


def test_data_and_https_files_pass_by_default() -> None:
    check_files(with_file(PNG), ServerSettings())
    check_files(with_file("https://example.com/cat.png"), ServerSettings())


def test_a_scheme_not_allowed_is_422_naming_the_message_and_file() -> None:
    error = refusal(with_file("file:///etc/passwd"), ServerSettings())
    assert (error.status, error.code) == (422, "file_url_not_allowed")
    assert error.message == "message 'u1': file 'pic.png': URL scheme 'file:' is not allowed (data:, https:)"
    assert refusal(with_file("http://example.com/a.png"), ServerSettings()).code == "file_url_not_allowed"
    check_files(with_file("http://example.com/a.png"), ServerSettings(file_url_schemes=("http",)))


def test_an_inline_file_over_the_limit_is_413() -> None:
    error = refusal(with_file(PNG), ServerSettings(max_file_bytes=50))
    assert (error.status, error.code) == (413, "file_too_large")
    check_files(with_file(PNG), ServerSettings(max_file_bytes=100))


def test_a_malformed_data_url_is_422() -> None:
    assert refusal(with_file("data:image/png;base64,@@@"), ServerSettings()).code == "invalid_file"
    assert refusal(with_file("data:image/png;base64"), ServerSettings()).code == "invalid_file"


def test_data_url_bytes_reads_base64_and_plain_payloads() -> None:
    assert data_url_bytes("data:text/plain;base64,aGk=") == b"hi"
    assert data_url_bytes("data:text/plain,hi") == b"hi"


def test_inline_base64_is_the_payload_of_a_data_url_only() -> None:
    assert inline_base64("data:image/png;base64,iVBO") == "iVBO"
    assert inline_base64("data:text/plain,hi") == "aGk="
    assert inline_base64("https://example.com/a.png") is None

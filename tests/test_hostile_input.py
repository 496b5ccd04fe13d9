"""Hostile request bodies over real HTTP: each ends in a 4xx naming the field, never a 500 or bad JSON."""

import json
import logging
import socket
import time
from collections.abc import Callable, Iterator
from typing import Any
from urllib.parse import urlsplit

import httpx
import pytest

from chatgate.adapters.vercel_ai import VercelAIProtocol
from chatgate.config import Config
from chatgate.run_input import RunInput
from chatgate.strict_json import MAX_DEPTH
from chatgate.web.app import create_app
from tests.conftest import LiveServer, make_config

DEEP = "[" * 10_000 + "]" * 10_000
NON_FINITE = ["NaN", "Infinity", "-Infinity", "1e400"]


@pytest.fixture
def url(serve: Callable[[Config], str]) -> str:
    tools = {"get_weather": {"function": "tests.sample_tools:get_weather"}}
    return serve(make_config({"bot": {"model": "builtin:echo", "default": True, "tools": tools}}))


def post(url: str, body: str) -> httpx.Response:
    return httpx.post(url, content=body.encode(), headers={"content-type": "application/json"}, timeout=10)


def refused_naming(response: httpx.Response, field: str) -> str:
    assert response.status_code == 422, response.text
    error = response.json()["error"]
    assert error["code"] == "invalid_request"
    assert error["details"][0]["field"] == field
    message: str = error["message"]
    assert field in message
    return message


def ag_ui(messages: str, forwarded: str = "{}") -> str:
    return f'{{"threadId": "t", "runId": "r", "messages": {messages}, "forwardedProps": {forwarded}}}'


def usechat_user(text: str) -> dict[str, Any]:
    return {"id": "u", "role": "user", "parts": [{"type": "text", "text": text}]}


def strict(data: str) -> Any:
    """JSON.parse's rules: NaN and Infinity are not JSON."""

    def refuse(constant: str) -> None:
        raise AssertionError(f"a bare {constant} in {data!r}")

    return json.loads(data, parse_constant=refuse)


def sse_payloads(text: str) -> Iterator[Any]:
    for frame in text.split("\n\n"):
        if frame.startswith("data: ") and frame != "data: [DONE]":
            yield strict(frame[len("data: ") :])


def test_an_encrypted_value_nested_10000_deep_on_a_reasoning_message_is_a_422(url: str) -> None:
    message = {"id": "r1", "role": "reasoning", "content": "thinking", "encryptedValue": DEEP}
    response = post(f"{url}/ag-ui", ag_ui(json.dumps([message, {"id": "u", "role": "user", "content": "hi"}])))
    assert str(MAX_DEPTH) in refused_naming(response, "messages.0.encryptedValue")


def test_an_encrypted_value_nested_10000_deep_on_a_tool_call_is_a_422(url: str) -> None:
    call = {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}, "encryptedValue": DEEP}
    messages = [{"id": "u", "role": "user", "content": "hi"}, {"id": "a", "role": "assistant", "toolCalls": [call]}]
    response = post(f"{url}/ag-ui", ag_ui(json.dumps(messages)))
    refused_naming(response, "messages.1.toolCalls.0.encryptedValue")


def test_an_encrypted_value_just_past_the_limit_is_refused_and_one_within_is_kept(url: str) -> None:
    def body(depth: int) -> str:
        value = "[" * depth + "]" * depth
        encrypted = json.dumps({"v": json.loads(value)})
        message = {"id": "r1", "role": "reasoning", "content": "t", "encryptedValue": encrypted}
        return ag_ui(json.dumps([message, {"id": "u", "role": "user", "content": "hi"}]))

    assert post(f"{url}/ag-ui", body(MAX_DEPTH - 1)).status_code == 200
    refused_naming(post(f"{url}/ag-ui", body(MAX_DEPTH)), "messages.0.encryptedValue.v" + ".0" * (MAX_DEPTH - 1))


@pytest.mark.parametrize("route", ["/ag-ui", "/api/chat"])
def test_a_body_nested_10000_deep_anywhere_is_a_4xx(url: str, route: str) -> None:
    body = '{"messages": [], "forwardedProps": ' + DEEP + ', "extra": ' + DEEP + "}"
    response = post(f"{url}{route}", body)
    assert response.status_code == 422
    assert str(MAX_DEPTH) in response.json()["error"]["message"]


@pytest.mark.parametrize("number", NON_FINITE)
def test_a_non_finite_number_in_a_usechat_tool_input_is_a_422_naming_it(url: str, number: str) -> None:
    part = {"type": "tool-get_weather", "toolCallId": "c1", "state": "input-available", "input": {"city": "@"}}
    messages = [usechat_user("hi"), {"id": "a", "role": "assistant", "parts": [part]}]
    body = json.dumps({"id": "c", "messages": messages}).replace('"@"', number)
    refused_naming(post(f"{url}/api/chat", body), "messages.1.parts.0.input.city")


@pytest.mark.parametrize("number", NON_FINITE)
def test_a_non_finite_number_in_ag_ui_forwarded_props_is_a_422_naming_it(url: str, number: str) -> None:
    response = post(f"{url}/ag-ui", ag_ui('[{"id": "u", "role": "user", "content": "hi"}]', f'{{"n": [{number}]}}'))
    refused_naming(response, "forwardedProps.n.0")


@pytest.mark.parametrize("number", NON_FINITE)
def test_a_non_finite_number_in_ag_ui_tool_call_arguments_is_a_422_naming_it(url: str, number: str) -> None:
    call = {"id": "c1", "type": "function", "function": {"name": "f", "arguments": f'{{"x": {number}}}'}}
    messages = [{"id": "u", "role": "user", "content": "hi"}, {"id": "a", "role": "assistant", "toolCalls": [call]}]
    response = post(f"{url}/ag-ui", ag_ui(json.dumps(messages)))
    refused_naming(response, "messages.1.toolCalls.0.function.arguments.x")


@pytest.mark.parametrize("route", ["/ag-ui", "/api/chat"])
def test_a_model_writing_non_finite_tool_arguments_still_streams_only_json(url: str, route: str) -> None:
    # builtin:echo calls the tool with the text after the name as its arguments, as a careless model might.
    text = '/call get_weather {"city": "Oslo", "x": NaN, "y": 1e400}'
    if route == "/ag-ui":
        body = ag_ui(json.dumps([{"id": "u", "role": "user", "content": text}]))
    else:
        body = json.dumps({"id": "c", "messages": [usechat_user(text)]})
    response = post(f"{url}{route}", body)
    assert response.status_code == 200
    payloads = list(sse_payloads(response.text))  # every frame parses under JSON.parse's rules
    if route == "/api/chat":
        (available,) = [p for p in payloads if p["type"] == "tool-input-available"]
        assert available["input"] == {"city": "Oslo", "x": None, "y": None}
    assert payloads[-1]["type"] in ("finish", "RUN_FINISHED")


def test_a_body_abandoned_mid_upload_is_the_client_going_away(url: str, caplog: pytest.LogCaptureFixture) -> None:
    uvicorn_logger = logging.getLogger("uvicorn")  # it does not propagate to the root logger
    uvicorn_logger.addHandler(caplog.handler)
    try:
        with caplog.at_level(logging.DEBUG):
            address = urlsplit(url)
            for route in ("/api/chat", "/ag-ui"):
                with socket.create_connection((address.hostname, address.port)) as sock:
                    head = (
                        f"POST {route} HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\n"
                        "content-length: 100000\r\n\r\n"
                    )
                    sock.sendall(head.encode() + b'{"messages": [')
                    time.sleep(0.2)
            deadline = time.monotonic() + 5
            while len(gone(caplog)) < 2 and time.monotonic() < deadline:
                time.sleep(0.05)
            time.sleep(0.2)  # anything logged after the info line would arrive now
    finally:
        uvicorn_logger.removeHandler(caplog.handler)
    assert len(gone(caplog)) == 2
    assert all(record.levelno == logging.INFO for record in gone(caplog))
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING or r.exc_info], caplog.text
    assert httpx.get(f"{url}/healthz").json() == {"status": "ok"}
    assert post(f"{url}/api/chat", json.dumps({"messages": [usechat_user("hi")]})).is_success


def gone(caplog: pytest.LogCaptureFixture) -> list[logging.LogRecord]:
    return [r for r in caplog.records if "went away while sending the body" in r.getMessage()]


class RecursiveProtocol(VercelAIProtocol):
    """A protocol whose decoder walks client JSON recursively, as a third-party adapter might."""

    name = "recursive"
    route = "recursive"
    default_path = "/recursive"

    def decode(self, body: bytes) -> RunInput:
        def depth(value: Any) -> int:
            return 1 + max(map(depth, value), default=0) if isinstance(value, list) else 0

        depth(json.loads(body))
        return super().decode(body)


def test_a_recursion_error_in_any_decoder_is_a_422_not_a_500() -> None:
    server = LiveServer(create_app(make_config({"bot": {"model": "builtin:echo"}}), protocols=[RecursiveProtocol()]))
    server.start()
    try:
        deep = "[" * 100_000 + "]" * 100_000
        response = post(f"{server.url}/recursive", deep)
        assert response.status_code == 422
        assert "too deep" in response.json()["error"]["message"]
        assert httpx.get(f"{server.url}/healthz").is_success
    finally:
        server.stop()

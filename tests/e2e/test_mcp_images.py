"""An MCP tool's image reaches the model as an image, in each provider's own form, byte for byte.

The real ``@modelcontextprotocol/server-everything`` (stdio) answers ``get-tiny-image`` with text, a PNG
and text. A fake upstream per provider (real HTTP on loopback) asks for that tool, then answers; its
second request must carry the server's PNG as the very base64 the server sent: OpenAI-compatible as an
``image_url`` part of a user message after the tool message (a tool message holds text only),
Anthropic as an ``image`` block inside the ``tool_result``, Ollama in the tool message's ``images``.
Before, every provider got only the line ``[image: image/png, N bytes]``.
"""

from __future__ import annotations

import base64
import re
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from chatgate.web.app import create_app
from tests.conftest import LiveServer, make_config
from tests.e2e.approval_flows import events_of
from tests.mcp.real_servers import EVERYTHING, calls_on_server, counted, everything_stdio
from tests.providers.fakes import FakeUpstream, Reply, anthropic_event, fake_in_thread, ndjson, openai_chunk, text_reply
from tests.providers.support import provider_table

KINDS = ["openai", "anthropic", "ollama"]
TOOL = "everything__get-tiny-image"
ARGUMENTS = {"type": "input_json_delta", "partial_json": "{}"}
NDJSON = {"content-type": "application/x-ndjson"}


def _tiny_image() -> str:
    """The PNG the server sends, as base64, read from the server's own source."""
    source = (EVERYTHING.parent / "tools" / "get-tiny-image.js").read_text(encoding="utf-8")
    match = re.search(r'MCP_TINY_IMAGE\s*=\s*"([A-Za-z0-9+/=]+)"', source)
    assert match is not None, "the server's tiny image moved"
    return match.group(1)


def _calls_tool(kind: str) -> Reply:
    """A model turn calling the image tool with no arguments, in ``kind``'s wire format."""
    if kind == "openai":
        call = {"index": 0, "id": "call_img", "type": "function", "function": {"name": TOOL, "arguments": "{}"}}
        return Reply([openai_chunk({"tool_calls": [call]}), openai_chunk({}, "tool_calls"), b"data: [DONE]\n\n"])
    if kind == "anthropic":
        block = {"type": "tool_use", "id": "toolu_img", "name": TOOL, "input": {}}
        return Reply(
            [
                anthropic_event("message_start", message={"id": "msg_1", "usage": {"input_tokens": 5}}),
                anthropic_event("content_block_start", index=0, content_block=block),
                anthropic_event(
                    "content_block_delta", index=0, delta={"type": "input_json_delta", "partial_json": "{}"}
                ),
                anthropic_event("content_block_stop", index=0),
                anthropic_event("message_delta", delta={"stop_reason": "tool_use"}, usage={"output_tokens": 2}),
                anthropic_event("message_stop"),
            ]
        )
    message = {"role": "assistant", "content": "", "tool_calls": [{"function": {"name": TOOL, "arguments": {}}}]}
    done = {"message": {"role": "assistant", "content": ""}, "done": True, "done_reason": "stop"}
    return Reply(
        [ndjson({"message": message, "done": False}), ndjson(done)], headers={"content-type": "application/x-ndjson"}
    )


@pytest.fixture(scope="module")
def log(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("mcp") / "calls.log"


@pytest.fixture(scope="module")
def upstreams() -> Iterator[dict[str, FakeUpstream]]:
    with (
        fake_in_thread(_calls_tool("openai"), text_reply("openai", "a logo")) as openai,
        fake_in_thread(_calls_tool("anthropic"), text_reply("anthropic", "a logo")) as anthropic,
        fake_in_thread(_calls_tool("ollama"), text_reply("ollama", "a logo")) as ollama,
    ):
        yield {"openai": openai, "anthropic": anthropic, "ollama": ollama}


@pytest.fixture(scope="module")
def base(upstreams: dict[str, FakeUpstream], log: Path) -> Iterator[str]:
    """One chatgate for the module: an agent per provider, all on one stdio server-everything."""
    mcp = {"everything": {"include": ["get-tiny-image"]}}
    config = make_config(
        {kind: {"model": f"{kind}:m", "mcp": mcp} for kind in KINDS},
        providers={kind: provider_table(kind, upstream.url) for kind, upstream in upstreams.items()},
        mcp_servers={"everything": {"command": counted(everything_stdio(), log)}},
    )
    server = LiveServer(create_app(config))
    server.start()
    try:
        for _ in range(600):
            if httpx.get(f"{server.url}/readyz").status_code == 200:
                break
            time.sleep(0.05)
        yield server.url
    finally:
        server.stop()


def _sent_images(kind: str, body: dict[str, Any]) -> list[tuple[str, str]]:
    """``(media type, base64)`` of each image the second model call carried, read the provider's way."""
    messages = body["messages"]
    if kind == "openai":
        tool, after = messages[-2], messages[-1]
        assert tool["role"] == "tool" and isinstance(tool["content"], str) and "[image: image/png" in tool["content"]
        assert after["role"] == "user" and after["content"][0]["type"] == "text"
        urls = [part["image_url"]["url"] for part in after["content"] if part["type"] == "image_url"]
        return [tuple(url.removeprefix("data:").split(";base64,")) for url in urls]  # type: ignore[misc]
    if kind == "anthropic":
        (result,) = messages[-1]["content"]
        assert result["type"] == "tool_result" and result["content"][0]["type"] == "text"
        images = [block["source"] for block in result["content"] if block["type"] == "image"]
        assert all(source["type"] == "base64" for source in images)
        return [(source["media_type"], source["data"]) for source in images]
    tool = messages[-1]
    assert tool["role"] == "tool" and tool["tool_name"] == TOOL
    return [("image/png", data) for data in tool["images"]]


@pytest.mark.parametrize("kind", KINDS)
def test_an_mcp_image_reaches_the_model_as_the_servers_own_bytes(
    base: str, upstreams: dict[str, FakeUpstream], log: Path, kind: str
) -> None:
    upstream = upstreams[kind]
    before, calls_before = len(upstream.requests), len(calls_on_server(log))
    body = {"threadId": "t1", "runId": "r1", "messages": [{"id": "u1", "role": "user", "content": "show the logo"}]}
    events = events_of(httpx.post(f"{base}/agents/{kind}/ag-ui", json=body, timeout=60))
    assert events[-1]["type"] == "RUN_FINISHED", events[-2:]
    assert len(upstream.requests) - before == 2  # the call, then the answer with the image
    assert [c["tool"] for c in calls_on_server(log)[calls_before:]] == ["get-tiny-image"]
    assert _sent_images(kind, upstream.requests[-1].body) == [("image/png", _tiny_image())]
    (result,) = [e for e in events if e["type"] == "TOOL_CALL_RESULT"]  # the text names it, as before
    size = len(base64.b64decode(_tiny_image()))
    assert (
        result["content"]
        == f"Here's the image you requested:\n[image: image/png, {size} bytes]\nThe image above is the MCP logo."
    )

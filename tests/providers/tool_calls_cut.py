"""Upstream answers that make a tool call and then stop for another reason, in each API's exact wire bytes.

Seen from a real model server: the model completes a call and keeps talking until ``max_tokens``
(``finish_reason: "length"``), or ``max_tokens`` falls inside the call's arguments. The tool is
``tests.sample_tools:record``, which appends a line to a file, so a test counts its executions.
"""

from __future__ import annotations

import json
from pathlib import Path

from tests.providers.fakes import Reply, anthropic_event, openai_chunk, openai_usage

__all__ = ["RECORD_TOOL", "anthropic_call", "arguments_for", "openai_call", "runs_of"]

RECORD_TOOL = {"record": {"function": "tests.sample_tools:record"}}


def arguments_for(path: Path) -> str:
    """The JSON arguments of a whole call of ``record`` writing to ``path``."""
    return json.dumps({"path": str(path), "tag": "ran"})


def runs_of(path: Path) -> int:
    """How many times ``record`` ran with ``path``."""
    return len(path.read_text().splitlines()) if path.exists() else 0


def openai_call(arguments: str, finish_reason: str, *, name: str = "record", after: str = "") -> Reply:
    """A Chat Completions stream: a call of ``name`` (arguments in two pieces), ``after`` text, the finish."""
    start = {"index": 0, "id": "call_1", "type": "function", "function": {"name": name, "arguments": ""}}
    half = len(arguments) // 2
    frames: list[bytes | float] = [
        openai_chunk({"role": "assistant", "content": None}),
        openai_chunk({"tool_calls": [start]}),
        openai_chunk({"tool_calls": [{"index": 0, "function": {"arguments": arguments[:half]}}]}),
        openai_chunk({"tool_calls": [{"index": 0, "function": {"arguments": arguments[half:]}}]}),
    ]
    if after:
        frames.append(openai_chunk({"content": after}))
    return Reply([*frames, openai_chunk({}, finish_reason), openai_usage(30, 16), b"data: [DONE]\n\n"])


def anthropic_call(arguments: str, stop_reason: str, *, name: str = "record") -> Reply:
    """A Messages stream: a ``tool_use`` block with ``arguments``, closed, then ``stop_reason``."""
    block = {"type": "tool_use", "id": "toolu_1", "name": name, "input": {}}
    delta = {"type": "input_json_delta", "partial_json": arguments}
    return Reply(
        [
            anthropic_event("message_start", message={"id": "msg_1", "usage": {"input_tokens": 30}}),
            anthropic_event("content_block_start", index=0, content_block=block),
            anthropic_event("content_block_delta", index=0, delta=delta),
            anthropic_event("content_block_stop", index=0),
            anthropic_event("message_delta", delta={"stop_reason": stop_reason}, usage={"output_tokens": 16}),
            anthropic_event("message_stop"),
        ]
    )

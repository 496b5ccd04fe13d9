"""The endings a run log needs from each adapter: a stopped run's, and a lost producer's (``interrupted``)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from chatgate.adapters.ag_ui import protocol as ag_ui
from chatgate.adapters.vercel_ai import protocol as vercel_ai
from chatgate.events import ModelUsage, RunFinished, StepStarted, TextDelta, TextStart
from chatgate.run_input import RunInput
from tests.adapters.test_ag_ui_encode import AGENT, events_of
from tests.adapters.test_ag_ui_encode import parse as parse_ag_ui
from tests.conftest import make_config

RUN = RunInput(messages=(), thread_id="t1", run_id="r1")
USAGE = (ModelUsage("builtin", "echo", 2, 1),)
STOPPED = [
    StepStarted("model-call-1"),
    TextStart("m1"),
    TextDelta("m1", "Hel"),
    RunFinished("other", stopped=True, usage=USAGE),
]


def _frames(stream: bytes) -> list[Any]:
    return [frame[6:] if frame[6:] == b"[DONE]" else json.loads(frame[6:]) for frame in stream[:-2].split(b"\n\n")]


async def test_a_stopped_ag_ui_run_finishes_cancelled_with_everything_closed() -> None:
    stream = b"".join([frame async for frame in ag_ui.encode(RUN, AGENT, events_of(STOPPED))])
    frames = parse_ag_ui(stream)
    assert [f["type"] for f in frames[-3:]] == ["TEXT_MESSAGE_END", "STEP_FINISHED", "RUN_FINISHED"]
    assert frames[-1]["outcome"] == {"type": "cancelled"}
    assert frames[-1]["usage"][0]["totalTokens"] == 3


@pytest.mark.parametrize("version", ["v5", "v6", "v7"])
async def test_a_stopped_usechat_run_ends_with_its_usage_then_abort(version: str) -> None:
    agent = make_config({"a": {"model": "builtin:echo", "vercel_ai_version": version}}).agents["a"]
    frames = _frames(b"".join([frame async for frame in vercel_ai.encode(RUN, agent, events_of(STOPPED))]))
    assert frames[-1] == b"[DONE]"
    assert [f["type"] for f in frames[-5:-1]] == ["text-end", "finish-step", "message-metadata", "abort"]
    assert frames[-3]["messageMetadata"]["usage"]["totalTokens"] == 3
    assert not any(isinstance(f, dict) and f["type"] in ("error", "finish") for f in frames)


def test_an_interrupted_ag_ui_run_is_a_run_error() -> None:
    (frame,) = parse_ag_ui(ag_ui.interrupted(AGENT, "gone", "producer_lost"))
    assert frame == {"type": "RUN_ERROR", "message": "gone", "code": "producer_lost"}


@pytest.mark.parametrize(("version", "reason"), [("v5", None), ("v7", "error")])
def test_an_interrupted_usechat_run_is_error_finish_done(version: str, reason: str | None) -> None:
    agent = make_config({"a": {"model": "builtin:echo", "vercel_ai_version": version}}).agents["a"]
    error, finish, done = _frames(vercel_ai.interrupted(agent, "gone", "producer_lost"))
    assert error == {"type": "error", "errorText": "gone"}
    assert finish["type"] == "finish" and finish.get("finishReason") == reason and done == b"[DONE]"

"""Stopping the server mid-stream: past the grace period, each protocol's stream ends with its error event."""

import json
import signal
import subprocess
import time
from collections.abc import Sequence
from pathlib import Path

import httpx
import pytest

from chatgate.run.runner import SHUTTING_DOWN
from tests.conftest import ChatgateProcess

CONFIG = """
[server]
shutdown_grace_seconds = 1
[agents.slow]
model = "builtin:echo"
default = true
model_settings = { delay = 0.2 }
"""
AG_UI = {"threadId": "t", "runId": "r", "messages": [{"id": "u", "role": "user", "content": " ".join(["word"] * 200)}]}
USE_CHAT = {"id": "c", "messages": [{"id": "u", "role": "user", "parts": [{"type": "text", "text": "word " * 200}]}]}


@pytest.fixture
def server(tmp_path: Path, chatgate_process: ChatgateProcess) -> tuple[str, "subprocess.Popen[bytes]"]:
    path = tmp_path / "c.toml"
    path.write_text(CONFIG)
    return chatgate_process("--config", str(path))


def frames_after_sigterm(
    url: str, process: subprocess.Popen[bytes], path: str, body: object, signals: Sequence[int] = (signal.SIGTERM,)
) -> list[str]:
    frames: list[str] = []
    with httpx.stream("POST", f"{url}{path}", json=body, timeout=30) as response:
        buffer = ""
        for text in response.iter_text():
            buffer += text
            *complete, buffer = buffer.split("\n\n")
            frames += [frame.removeprefix("data: ") for frame in complete if frame.startswith("data: ")]
            if len(frames) == 6:
                for signum in signals:
                    process.send_signal(signum)
                    time.sleep(0.2)  # one signal at a time, as an operator sends them
    assert process.wait(timeout=20) in (0, -signals[0])  # uvicorn re-raises the signal once shut down
    return frames


def test_ag_ui_streams_end_with_run_error_when_the_server_stops(server) -> None:  # type: ignore[no-untyped-def]
    url, process = server
    frames = [json.loads(frame) for frame in frames_after_sigterm(url, process, "/ag-ui", AG_UI)]
    types = [frame["type"] for frame in frames]
    assert types[-4:] == ["TEXT_MESSAGE_CONTENT", "TEXT_MESSAGE_END", "STEP_FINISHED", "RUN_ERROR"]
    assert frames[-1] == {"type": "RUN_ERROR", "message": SHUTTING_DOWN, "code": "server_shutdown"}
    assert len(frames) < 50  # ended early: the whole answer is over 200 frames


def test_use_chat_streams_end_with_error_and_finish_when_the_server_stops(server) -> None:  # type: ignore[no-untyped-def]
    url, process = server
    frames = frames_after_sigterm(url, process, "/api/chat", USE_CHAT)
    assert frames[-1] == "[DONE]"
    tail = [json.loads(frame) for frame in frames[-5:-1]]
    assert tail == [
        {"type": "text-end", "id": tail[0]["id"]},
        {"type": "error", "errorText": SHUTTING_DOWN},
        {"type": "finish-step"},
        {"type": "finish", "finishReason": "error"},
    ]
    assert len(frames) < 50


@pytest.mark.parametrize(
    "signals", [(signal.SIGTERM, signal.SIGTERM), (signal.SIGINT,)], ids=["sigterm-twice", "sigint"]
)
def test_a_second_sigterm_or_a_sigint_ends_streams_at_once(
    tmp_path: Path, chatgate_process: ChatgateProcess, signals: tuple[int, ...]
) -> None:
    path = tmp_path / "c.toml"
    path.write_text(CONFIG.replace("shutdown_grace_seconds = 1", "shutdown_grace_seconds = 60"))
    url, process = chatgate_process("--config", str(path))
    frames = frames_after_sigterm(url, process, "/api/chat", USE_CHAT, signals)
    assert frames[-1] == "[DONE]"
    assert json.loads(frames[-4]) == {"type": "error", "errorText": SHUTTING_DOWN}
    assert len(frames) < 50  # not the 60 s grace period: at once

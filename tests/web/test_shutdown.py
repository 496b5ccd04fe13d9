"""Stopping the server mid-stream: each protocol's stream ends with its error event, not a cut."""

import json
import signal
import subprocess
from pathlib import Path

import httpx
import pytest

from chatgate.run.runner import SHUTTING_DOWN
from tests.conftest import ChatgateProcess

CONFIG = """
[server]
shutdown_grace_seconds = 20
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


def frames_after_sigterm(url: str, process: subprocess.Popen[bytes], path: str, body: object) -> list[str]:
    frames: list[str] = []
    with httpx.stream("POST", f"{url}{path}", json=body, timeout=30) as response:
        buffer = ""
        for text in response.iter_text():
            buffer += text
            *complete, buffer = buffer.split("\n\n")
            frames += [frame.removeprefix("data: ") for frame in complete if frame.startswith("data: ")]
            if len(frames) == 6:
                process.send_signal(signal.SIGTERM)
    assert process.wait(timeout=20) in (0, -signal.SIGTERM)  # uvicorn re-raises the signal once shut down
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

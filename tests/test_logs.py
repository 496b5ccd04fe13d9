"""Log lines of ``chatgate serve``: text by default, one JSON object per line with ``log_format = "json"``.

Both name the config file and the agents at start, put the request id on every line of a request
(uvicorn's access lines included) and never carry prompt or message text.
"""

import json
import logging
import sys
import time
from pathlib import Path

import httpx

from chatgate.logs import REQUEST_ID, JsonFormatter, logging_config
from tests.conftest import ChatgateProcess

PROMPT_TEXT = "OPERATOR-PROMPT-7731"
USER_TEXT = "USER-SECRET-5512"
CONFIG = f"""
[server]
log_format = "{{format}}"

[agents.bot]
model = "builtin:echo"
system_prompt = "{PROMPT_TEXT}"
default = true

[agents.helper]
model = "builtin:echo"
"""


def serve_and_chat(chatgate_process: ChatgateProcess, tmp_path: Path, log_format: str) -> list[str]:
    config = tmp_path / "chatgate.toml"
    config.write_text(CONFIG.replace("{format}", log_format))
    url, process = chatgate_process("--config", str(config))
    messages = [
        {"id": "s1", "role": "system", "content": f"client system {USER_TEXT}"},
        {"id": "u1", "role": "user", "content": USER_TEXT},
    ]
    body = {"threadId": "t", "runId": "r", "messages": messages}
    response = httpx.post(f"{url}/ag-ui", json=body, headers={"x-request-id": "req-42"})
    assert response.status_code == 200
    assert USER_TEXT in response.text  # the echo model did see it
    process.terminate()
    process.wait(timeout=15)
    time.sleep(0.1)
    (log,) = tmp_path.glob("chatgate-*.log")
    return log.read_text().splitlines()


def test_json_logs_are_one_object_per_line_with_the_request_id(
    chatgate_process: ChatgateProcess, tmp_path: Path
) -> None:
    lines = serve_and_chat(chatgate_process, tmp_path, "json")
    entries = [json.loads(line) for line in lines]  # every line, uvicorn's too, is JSON
    assert {"uvicorn.error", "uvicorn.access", "chatgate.server"} <= {entry["logger"] for entry in entries}
    (start,) = [entry for entry in entries if entry["logger"] == "chatgate.server"]
    assert "chatgate.toml" in start["message"]
    assert "bot, helper" in start["message"]
    (access,) = [entry for entry in entries if entry["logger"] == "uvicorn.access" and entry["path"] == "/ag-ui"]
    assert (access["request_id"], access["method"], access["status"]) == ("req-42", "POST", 200)
    stripped = [entry for entry in entries if entry["logger"] == "chatgate.policy"]
    assert stripped and stripped[0]["request_id"] == "req-42" and stripped[0]["level"] == "WARNING"
    assert not any(USER_TEXT in line or PROMPT_TEXT in line for line in lines)


def test_text_logs_are_the_default_and_carry_the_request_id(chatgate_process: ChatgateProcess, tmp_path: Path) -> None:
    lines = serve_and_chat(chatgate_process, tmp_path, "text")
    assert not any(line.startswith("{") for line in lines)
    assert any("chatgate.server [-]: config" in line and "chatgate.toml" in line for line in lines)
    assert any("uvicorn.access [req-42]" in line and "POST /ag-ui" in line for line in lines)
    assert not any(USER_TEXT in line or PROMPT_TEXT in line for line in lines)


def test_the_json_formatter_keeps_a_traceback_in_one_line() -> None:
    token = REQUEST_ID.set("r-1")
    try:
        try:
            raise ValueError("boom")
        except ValueError:
            record = logging.getLogger("chatgate.t").makeRecord(
                "chatgate.t", logging.ERROR, __file__, 1, "failed %s", ("x",), exc_info=sys.exc_info()
            )
        line = JsonFormatter().format(record)
    finally:
        REQUEST_ID.reset(token)
    assert "\n" not in line
    entry = json.loads(line)
    assert (entry["message"], entry["request_id"], entry["level"]) == ("failed x", "r-1", "ERROR")
    assert "ValueError: boom" in entry["exception"]


def test_the_logging_config_routes_uvicorn_through_the_one_handler() -> None:
    config = logging_config("json", "warning")
    assert config["root"]["level"] == "WARNING"
    assert config["handlers"]["stderr"]["filters"] == ["request_id", "redact"]
    assert all(logger["propagate"] and not logger["handlers"] for logger in config["loggers"].values())

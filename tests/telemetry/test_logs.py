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

from chatgate.telemetry.logs import REQUEST_ID, JsonFormatter, RedactFilter, logging_config, redact_url
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
    # uvicorn's three loggers, named: an empty table (uvicorn's own handlers kept) would fail here.
    assert set(config["loggers"]) == {"uvicorn", "uvicorn.error", "uvicorn.access"}
    assert all(logger == {"handlers": [], "propagate": True} for logger in config["loggers"].values())
    assert config["root"]["handlers"] == ["stderr"]


KEY = "sk-live-QUERY-KEY-9931"


def test_a_key_in_the_query_string_is_refused_and_redacted_from_the_access_log(
    chatgate_process: ChatgateProcess, tmp_path: Path
) -> None:
    config = tmp_path / "chatgate.toml"
    config.write_text(f'keys = [{{ id = "ops", key = "{KEY}" }}]\n[agents.bot]\nmodel = "builtin:echo"\n')
    url, process = chatgate_process("--config", str(config))
    targets = [f"/agents?key={KEY}", f"/agents?x=1&API_KEY={KEY}&y=2", f"/agents?access_token={KEY}&token={KEY}"]
    for target in targets:
        assert httpx.get(f"{url}{target}").status_code == 401
    assert httpx.get(f"{url}/agents/bot%00%1b[31m/threads?q=%00").status_code in (401, 404)
    process.terminate()
    process.wait(timeout=15)
    (log,) = tmp_path.glob("chatgate-*.log")
    text = log.read_text()
    access = [line for line in text.splitlines() if "GET /agents" in line]
    assert len(access) == 4, text
    assert KEY not in text
    assert "GET /agents?key=[redacted]" in access[0]
    assert "x=1&API_KEY=[redacted]&y=2" in access[1]
    assert "access_token=[redacted]&token=[redacted]" in access[2]
    assert not any(char in text for char in "\x00\x1b\x7f")


def test_the_redact_filter_escapes_control_characters_and_userinfo() -> None:
    assert (
        redact_url("https://alice:pw@example.test/x?Key=s&k=v")
        == "https://[redacted]@example.test/x?Key=[redacted]&k=v"
    )
    assert redact_url("/a\x00b\nc") == "/a\\x00b\\nc"
    record = logging.LogRecord(
        "chatgate.server", logging.WARNING, __file__, 1, "thread %s: %r", ("nul\x00id\x1b", 1), None
    )
    assert RedactFilter().filter(record)
    assert record.getMessage() == "thread nul\\x00id\\x1b: 1"
    multi = logging.LogRecord("chatgate.config", logging.ERROR, __file__, 1, "problems:\n  a\n  b", (), None)
    RedactFilter().filter(multi)
    assert multi.getMessage() == "problems:\n  a\n  b"  # line breaks chatgate writes itself stay

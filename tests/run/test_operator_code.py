"""Tool and template modules beside the config file import with no PYTHONPATH, in check-config and serve."""

import json
import os
import subprocess
import sys
from pathlib import Path

import httpx

from tests.conftest import ChatgateProcess

CONFIG = """
[agents.bot]
model = "builtin:echo"

[agents.bot.tools.forecast]
function = "beside_config_tools.weather:forecast"

[agents.bot.system_prompt]
template = "{{GREETING}}"
variables = { GREETING = { code = "prompt/greeting.py" } }
"""


def config_folder(root: Path) -> Path:
    """A config folder as an operator lays it out: the file, a tools package, a template code file."""
    folder = root / "config"
    (folder / "beside_config_tools").mkdir(parents=True)
    (folder / "beside_config_tools" / "__init__.py").write_text("")
    (folder / "beside_config_tools" / "weather.py").write_text(
        "from beside_config_tools.units import CELSIUS\n\n"
        "def forecast(city: str) -> str:\n"
        '    """The weather in a city."""\n'
        '    return f"sunny in {city}, 21{CELSIUS}"\n'
    )
    (folder / "beside_config_tools" / "units.py").write_text('CELSIUS = "C"\n')
    (folder / "prompt").mkdir()
    (folder / "prompt" / "greeting.py").write_text(
        "from beside_config_prompt_text import GREETING\nSYSTEM_MESSAGE_VALUE = GREETING\n"
    )
    (folder / "beside_config_prompt_text.py").write_text('GREETING = "You are the weather desk."\n')
    (folder / "chatgate.toml").write_text(CONFIG)
    return folder / "chatgate.toml"


def without_pythonpath() -> dict[str, str]:
    return {key: value for key, value in os.environ.items() if key != "PYTHONPATH"}


def test_check_config_imports_a_tool_module_beside_the_config(tmp_path: Path) -> None:
    path = config_folder(tmp_path)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    completed = subprocess.run(
        [str(Path(sys.executable).with_name("chatgate")), "check-config", str(path)],
        cwd=elsewhere,
        env=without_pythonpath(),
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    assert completed.returncode == 0, completed.stderr
    assert "ok (1 agent(s)" in completed.stdout


def test_serve_runs_a_tool_and_a_template_beside_the_config(tmp_path: Path, chatgate_process: ChatgateProcess) -> None:
    assert str(tmp_path) not in os.environ.get("PYTHONPATH", "")  # the served process inherits this environment
    path = config_folder(tmp_path)
    url, _ = chatgate_process("--config", str(path))
    body = {
        "threadId": "t1",
        "runId": "r1",
        "messages": [{"id": "u1", "role": "user", "content": '/call forecast {"city": "Lisbon"}'}],
        "tools": [],
        "context": [],
        "state": {},
        "forwardedProps": {},
    }
    with httpx.stream("POST", f"{url}/ag-ui", json=body, timeout=20) as response:
        events = [json.loads(line[6:]) for line in response.iter_lines() if line.startswith("data: ")]
    results = [event["content"] for event in events if event["type"] == "TOOL_CALL_RESULT"]
    assert results == ["sunny in Lisbon, 21C"]
    body["messages"] = [{"id": "u1", "role": "user", "content": "hello"}]
    with httpx.stream("POST", f"{url}/ag-ui", json=body, timeout=20) as response:
        events = [json.loads(line[6:]) for line in response.iter_lines() if line.startswith("data: ")]
    text = "".join(event["delta"] for event in events if event["type"] == "TEXT_MESSAGE_CONTENT")
    assert text.startswith("System prompt: You are the weather desk.\n")

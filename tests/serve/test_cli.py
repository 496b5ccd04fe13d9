import json
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from chatgate.serve.cli import main
from tests.conftest import ChatgateProcess


def test_check_config_accepts_a_valid_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "ok.toml"
    path.write_text('[agents.bot]\nmodel = "builtin:echo"\n')
    assert main(["check-config", str(path)]) == 0
    assert "ok (1 agent(s); default: bot)" in capsys.readouterr().out


def test_check_config_exits_non_zero_naming_every_problem(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "bad.toml"
    path.write_text('[agents.bot]\nmodel = "builtin:echo"\nmanage_system_prompt = "nobody"\nextra = 1\n')
    assert main(["check-config", str(path)]) == 1
    err = capsys.readouterr().err
    assert "agents.bot.manage_system_prompt:" in err
    assert "agents.bot.extra: unknown key" in err


def test_serve_refuses_an_invalid_config_before_binding(tmp_path: Path) -> None:
    path = tmp_path / "bad.toml"
    path.write_text("[agents.bot]\n")
    completed = subprocess.run(
        [sys.executable, "-m", "chatgate.serve.cli", "serve", "--port", "1", "--config", str(path)],
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    assert completed.returncode == 2
    assert "agents.bot.model: required key is missing" in completed.stderr


def test_serve_reads_the_config_path_from_the_environment(tmp_path: Path) -> None:
    path = tmp_path / "bad.toml"
    path.write_text("nonsense = true\n")
    completed = subprocess.run(
        [sys.executable, "-m", "chatgate.serve.cli", "serve", "--port", "1"],
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
        env={"CHATGATE_CONFIG": str(path), "PATH": "/usr/bin:/bin"},
    )
    assert completed.returncode == 2
    assert "nonsense: unknown key" in completed.stderr


def test_the_installed_command_serves_the_builtin_agent_with_no_config(chatgate_process: ChatgateProcess) -> None:
    url, _ = chatgate_process()
    assert httpx.get(f"{url}/healthz").json() == {"status": "ok"}
    agents = httpx.get(f"{url}/agents").json()["agents"]
    assert [(a["name"], a["model"], a["default"]) for a in agents] == [("assistant", "builtin:echo", True)]


def test_root_path_serves_what_a_prefix_stripping_proxy_forwards(chatgate_process: ChatgateProcess) -> None:
    url, _ = chatgate_process("--root-path", "/llm/")  # the proxy took /llm off: chatgate sees /agents
    (agent,) = httpx.get(f"{url}/agents").json()["agents"]
    assert agent["protocols"] == {"ag-ui": "/llm/agents/assistant/ag-ui", "vercel-ai": "/llm/agents/assistant/chat"}
    assert httpx.get(f"{url}/").text.count('src="static/chat.js"') == 1
    chat = {"id": "c1", "messages": [{"id": "u1", "role": "user", "parts": [{"type": "text", "text": "hi"}]}]}
    lines = httpx.post(f"{url}/api/chat", json=chat).text.splitlines()
    chunks = [json.loads(line[6:]) for line in lines if line.startswith("data: {")]
    assert "Last user message: hi" in "".join(chunk.get("delta", "") for chunk in chunks)
    assert chunks[-1]["type"] == "finish"


def test_root_path_must_be_a_path() -> None:
    assert main(["serve", "--root-path", "llm"]) == 2

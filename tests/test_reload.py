import logging
import os
import signal
import time
from collections.abc import Callable
from pathlib import Path

import httpx
import pytest

from chatgate.config import Config, load_config
from chatgate.reload import ConfigWatcher
from chatgate.server import create_app
from tests.conftest import ChatgateProcess, LiveServer, run_node_client

AGENT = '[agents.bot]\nmodel = "builtin:echo"\ndescription = "{}"\n'


def descriptions(url: str) -> list[str]:
    return [agent["description"] for agent in httpx.get(f"{url}/agents").json()["agents"]]


def wait_for(condition: Callable[[], bool], seconds: float = 10) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.05)
    return False


def test_reload_applies_a_valid_file_and_keeps_the_running_config_on_a_bad_one(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "c.toml"
    path.write_text(AGENT.format("one"))
    applied: list[Config] = []
    watcher = ConfigWatcher(path, applied.append)
    path.write_text(AGENT.format("two"))
    assert watcher.reload()
    assert applied[-1].agents["bot"].description == "two"
    path.write_text("[agents.bot]\n")
    with caplog.at_level(logging.ERROR, logger="chatgate.reload"):
        assert not watcher.reload()
    assert len(applied) == 1
    assert "agents.bot.model: required key is missing" in caplog.text


def test_a_changed_file_takes_effect_on_the_next_request(tmp_path: Path) -> None:
    path = tmp_path / "c.toml"
    path.write_text(AGENT.format("before"))
    server = LiveServer(create_app(load_config(path), config_path=path))
    server.start()
    try:
        assert descriptions(server.url) == ["before"]
        path.write_text(AGENT.format("after, longer"))
        assert wait_for(lambda: descriptions(server.url) == ["after, longer"])
    finally:
        server.stop()


def test_sighup_reloads_even_when_the_file_looks_unchanged(tmp_path: Path, chatgate_process: ChatgateProcess) -> None:
    path = tmp_path / "c.toml"
    path.write_text(AGENT.format("aaaa"))
    stamp = path.stat().st_mtime_ns
    url, process = chatgate_process("--config", str(path))
    path.write_text(AGENT.format("bbbb"))  # same size, and the old modification time put back
    os.utime(path, ns=(stamp, stamp))
    time.sleep(2.5)  # longer than the poll interval: polling alone must not have noticed
    assert descriptions(url) == ["aaaa"]
    process.send_signal(signal.SIGHUP)
    assert wait_for(lambda: descriptions(url) == ["bbbb"])


def test_a_reloaded_prompt_answers_the_next_turn_of_a_conversation_with_its_history(tmp_path: Path) -> None:
    path = tmp_path / "c.toml"
    prompt = '[agents.bot]\nmodel = "builtin:echo"\nsystem_prompt = "{}"\n'
    path.write_text(prompt.format("You are terse."))
    server = LiveServer(create_app(load_config(path), config_path=path))
    server.start()
    history = [
        {"id": "u1", "role": "user", "content": "first"},
        {"id": "a1", "role": "assistant", "content": "ok"},
        {"id": "u2", "role": "user", "content": "second"},
    ]

    def reply() -> str:
        result = run_node_client("ag_ui_run.mjs", {"url": f"{server.url}/ag-ui", "input": {"messages": history}})
        content: str = result["messages"][-1]["content"]
        return content

    try:
        assert reply() == "System prompt: You are terse.\nLast user message: second"
        path.write_text(prompt.format("You are a pirate, and verbose."))
        assert wait_for(lambda: reply().startswith("System prompt: You are a pirate, and verbose.\n"), 15)
        assert reply().endswith("Last user message: second")
    finally:
        server.stop()

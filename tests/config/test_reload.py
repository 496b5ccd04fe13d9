import json
import logging
import os
import signal
import time
from collections.abc import Callable
from pathlib import Path

import httpx
import pytest

from chatgate.config import Config, load_config
from chatgate.config.reload import ConfigWatcher
from chatgate.web.app import create_app
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


def ag_ui_reply(url: str, text: str) -> str:
    """The text an AG-UI run of one user message streams back."""
    body = {"threadId": "t1", "runId": "r1", "messages": [{"id": "u1", "role": "user", "content": text}]}
    body |= {"tools": [], "context": [], "state": {}, "forwardedProps": {}}
    with httpx.stream("POST", f"{url}/ag-ui", json=body, timeout=10) as response:
        lines = [line.removeprefix("data: ") for line in response.iter_lines() if line.startswith("data: ")]
    events = [json.loads(line) for line in lines]
    return "".join(event["delta"] for event in events if event["type"] == "TEXT_MESSAGE_CONTENT")


def test_an_edited_file_prompt_reaches_the_next_request(tmp_path: Path) -> None:
    path = tmp_path / "c.toml"
    path.write_text('[agents.bot]\nmodel = "builtin:echo"\nsystem_prompt = "${file:prompts/bot.md}"\n')
    (tmp_path / "prompts").mkdir()
    prompt = tmp_path / "prompts" / "bot.md"
    prompt.write_text("You are terse.")
    config = load_config(path)
    assert config.files_read == (path, tmp_path / "prompts" / "bot.md")
    server = LiveServer(create_app(config, config_path=path))
    server.start()
    try:
        assert ag_ui_reply(server.url, "hi").startswith("System prompt: You are terse.\n")
        prompt.write_text("You are a pirate.")  # the config file itself is untouched
        assert wait_for(lambda: ag_ui_reply(server.url, "hi").startswith("System prompt: You are a pirate.\n"))
    finally:
        server.stop()


def test_the_watcher_watches_every_file_the_config_reads(tmp_path: Path) -> None:
    for name in ("intro.md", "facts.md", "value.py", "setup.py", "when.py", "fallback.md"):
        (tmp_path / name).write_text("VALUE = 1\n" if name.endswith(".py") else "text")
    path = tmp_path / "c.toml"
    path.write_text(
        """
[agents.bot]
model = "builtin:echo"
instructions = "${file:fallback.md}"
[agents.bot.system_prompt]
template = "${file:intro.md} {{FACTS}} {{VALUE}}"
runtime_code = "setup.py"
[agents.bot.system_prompt.variables]
FACTS = { files = ["facts.md"], condition = { code = "when.py" } }
VALUE = { code = "value.py" }
"""
    )
    watcher = ConfigWatcher(path, lambda config: None, config=load_config(path))
    expected = {
        path,
        *(tmp_path / n for n in ("intro.md", "facts.md", "value.py", "setup.py", "when.py", "fallback.md")),
    }
    assert set(watcher.files) == expected


def test_a_missing_file_reference_is_watched_so_creating_it_reloads(tmp_path: Path) -> None:
    path = tmp_path / "c.toml"
    path.write_text('[agents.bot]\nmodel = "builtin:echo"\nsystem_prompt = "${file:later.md}"\n')
    (tmp_path / "later.md").write_text("first")
    applied: list[Config] = []
    watcher = ConfigWatcher(path, applied.append, config=load_config(path))
    (tmp_path / "later.md").unlink()
    assert not watcher.reload()
    assert tmp_path / "later.md" in watcher.files  # still watched: creating it again is a change
    (tmp_path / "later.md").write_text("second")
    assert watcher.reload()
    assert applied[-1].agents["bot"].system_prompt == "second"

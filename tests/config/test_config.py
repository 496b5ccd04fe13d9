import json
from pathlib import Path

import pytest

from chatgate.config import default_config, load_config, parse_config
from chatgate.errors import ConfigError


def write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


def problems_of(path: Path) -> list[str]:
    with pytest.raises(ConfigError) as caught:
        load_config(path)
    return caught.value.problems


def test_a_toml_file_defines_agents_with_documented_defaults(tmp_path: Path) -> None:
    config = load_config(write(tmp_path / "c.toml", '[agents.bot]\nmodel = "builtin:echo"\n'))
    bot = config.agents["bot"]
    assert (bot.manage_system_prompt, bot.system_prompt_fallback, bot.vercel_ai_version) == ("server", False, "v6")
    assert config.server.max_body_bytes == 1024 * 1024
    assert config.default_agent == "bot"  # the only agent is the default


def test_the_same_structure_in_json_is_accepted(tmp_path: Path) -> None:
    data = {"agents": {"a": {"model": "builtin:echo"}, "b": {"model": "builtin:echo", "default": True}}}
    config = load_config(write(tmp_path / "c.json", json.dumps(data)))
    assert config.default_agent == "b"


def test_several_agents_and_none_marked_default_means_no_default(tmp_path: Path) -> None:
    text = '[agents.a]\nmodel = "builtin:echo"\n[agents.b]\nmodel = "builtin:echo"\n'
    assert load_config(write(tmp_path / "c.toml", text)).default_agent is None


def test_env_and_file_references_are_resolved(tmp_path: Path) -> None:
    write(tmp_path / "prompt.md", "You are terse.")
    data = {"agents": {"a": {"model": "builtin:echo", "system_prompt": "${file:prompt.md} ${env:TONE} $${env:X}"}}}
    config = parse_config(data, base_dir=tmp_path, environ={"TONE": "Be dry."})
    assert config.agents["a"].system_prompt == "You are terse. Be dry. ${env:X}"


def test_every_problem_is_reported_with_its_key_path(tmp_path: Path) -> None:
    text = """
unknown_top = 1
[server]
max_body_bytes = -5
[agents.a]
model = "builtin:echo"
manage_system_prompt = "boss"
colour = "red"
system_prompt = "${env:CHATGATE_TEST_SURELY_UNSET}"
[agents.b]
default = true
"""
    problems = problems_of(write(tmp_path / "c.toml", text))
    assert "unknown_top: unknown key" in problems
    assert any(p.startswith("server.max_body_bytes:") for p in problems)
    assert "agents.a.colour: unknown key" in problems
    assert any(p.startswith("agents.a.manage_system_prompt:") and "'server' or 'client'" in p for p in problems)
    assert "agents.a.system_prompt: environment variable CHATGATE_TEST_SURELY_UNSET is not set" in problems
    assert "agents.b.model: required key is missing" in problems


def test_cross_key_rules_name_the_key_to_fix(tmp_path: Path) -> None:
    text = """
[agents.a]
model = "builtin:echo"
default = true
[agents.b]
model = "builtin:nonsense"
default = true
"""
    problems = problems_of(write(tmp_path / "c.toml", text))
    assert "agents.b.default: only one agent may be the default (also a)" in problems
    assert any(p.startswith("agents.b.model: the built-in provider has only") for p in problems)


def test_a_missing_file_reference_is_named(tmp_path: Path) -> None:
    problems = problems_of(
        write(tmp_path / "c.toml", '[agents.a]\nmodel = "builtin:echo"\nsystem_prompt = "${file:nope.md}"\n')
    )
    assert problems[0].startswith("agents.a.system_prompt: cannot read file 'nope.md'")


def test_unreadable_or_malformed_files_are_config_errors(tmp_path: Path) -> None:
    assert "cannot read" in problems_of(tmp_path / "absent.toml")[0]
    assert "not valid TOML" in problems_of(write(tmp_path / "bad.toml", "agents = ["))[0]
    assert "not valid JSON" in problems_of(write(tmp_path / "bad.json", "{"))[0]


def test_the_default_config_is_one_agent_on_the_builtin_model() -> None:
    config = default_config()
    assert config.default_agent == "assistant"
    assert config.agents["assistant"].model == "builtin:echo"


def test_the_shipped_example_config_is_valid() -> None:
    example = Path(__file__).parents[2] / "docs" / "examples" / "chatgate.toml"
    config = load_config(example)
    assert config.default_agent == "assistant"


def test_tools_are_declared_per_agent_and_their_functions_must_import(tmp_path: Path) -> None:
    text = """
[agents.a]
model = "builtin:echo"
max_steps = 3
[agents.a.tools.get_weather]
function = "tests.sample_tools:get_weather"
requires_approval = true
[agents.a.tools.broken]
function = "tests.sample_tools:missing"
[agents.a.client_tools.get_weather]
description = "clash"
[agents.a.client_tools."bad name"]
"""
    problems = problems_of(write(tmp_path / "c.toml", text))
    assert problems == [
        "agents.a.client_tools.bad name: tool names are 1-64 letters, digits, '_' or '-'",
        "agents.a.client_tools.get_weather: also declared under tools; a name can be one or the other",
        "agents.a.tools.broken.function: 'tests.sample_tools' has no attribute 'missing'",
    ]


def test_a_valid_tool_config_loads(tmp_path: Path) -> None:
    text = """
[agents.a]
model = "builtin:echo"
[agents.a.tools.add]
function = "tests.sample_tools:add"
timeout = 5
[agents.a.client_tools.pick_color]
description = "Ask the user for a colour."
"""
    agent = load_config(write(tmp_path / "c.toml", text)).agents["a"]
    assert (agent.tools["add"].timeout, agent.tools["add"].requires_approval, agent.max_steps) == (5, False, 10)
    assert agent.client_tools["pick_color"].parameters == {"type": "object", "properties": {}}


def test_template_references_are_checked_once_the_structure_is_valid(tmp_path: Path) -> None:
    text = """
[agents.a]
model = "builtin:echo"
[agents.a.system_prompt]
template = "{{KNOWN}} {{UNKNOWN}}"
runtime_code = "absent_runtime.py"
[agents.a.system_prompt.variables]
KNOWN = { files = ["absent.md"], condition = { code = "absent_check.py" } }
"""
    assert problems_of(write(tmp_path / "c.toml", text)) == [
        "agents.a.system_prompt.template: placeholder {{UNKNOWN}} has no variable",
        "agents.a.system_prompt.runtime_code: no such file 'absent_runtime.py'",
        "agents.a.system_prompt.variables.KNOWN.files.0: no such file 'absent.md'",
        "agents.a.system_prompt.variables.KNOWN.condition.code: no such file 'absent_check.py'",
    ]


def test_a_value_that_may_be_a_string_or_a_table_gets_one_clear_complaint(tmp_path: Path) -> None:
    text = """
[agents.a]
model = "builtin:echo"
system_prompt = 7
[agents.b]
model = "builtin:echo"
[agents.b.system_prompt]
template = "{{TWO}}"
variables = { TWO = { text = "x", inline_code = "1" } }
"""
    assert problems_of(write(tmp_path / "c.toml", text)) == [
        "agents.a.system_prompt: must be a string or a table",
        "agents.b.system_prompt.variables.TWO: give exactly one of text, files, code or inline_code",
    ]


def test_the_leak_guard_table_is_checked_and_defaults_by_policy(tmp_path: Path) -> None:
    text = """
[agents.a]
model = "builtin:echo"
[agents.b]
model = "builtin:echo"
manage_system_prompt = "client"
[agents.c]
model = "builtin:echo"
leak_guard = { mode = "stop", min_words = 5, canary = true }
"""
    config = load_config(write(tmp_path / "ok.toml", text))
    modes = {name: (agent.leak_guard_mode, agent.leak_guard.min_words) for name, agent in config.agents.items()}
    assert modes == {"a": ("redact", 8), "b": ("off", 8), "c": ("stop", 5)}
    bad = """
[agents.a]
model = "builtin:echo"
leak_guard = { mode = "hide", min_words = 1, colour = "red" }
"""
    problems = problems_of(write(tmp_path / "bad.toml", bad))
    assert any(p.startswith("agents.a.leak_guard.mode:") and "'redact', 'stop' or 'off'" in p for p in problems)
    assert any(p.startswith("agents.a.leak_guard.min_words:") for p in problems)
    assert "agents.a.leak_guard.colour: unknown key" in problems
    off = '[agents.b]\nmodel = "builtin:echo"\nmanage_system_prompt = "client"\nleak_guard = { canary = true }\n'
    canary = 'agents.b.leak_guard.canary: the canary needs the guard on; set mode = "redact" or "stop"'
    assert problems_of(write(tmp_path / "off.toml", off)) == [canary]

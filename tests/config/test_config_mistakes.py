"""What a new operator gets wrong in a first config, each refused by ``check-config`` with the fix named."""

from pathlib import Path

import pytest

from chatgate.serve.cli import main


def check(tmp_path: Path, text: str, capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    path = tmp_path / "c.toml"
    path.write_text(text, encoding="utf-8")
    status = main(["check-config", str(path)])
    return status, capsys.readouterr().err


def test_a_config_with_no_agents_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    status, err = check(tmp_path, "[server]\nmax_body_bytes = 1000\n", capsys)
    assert status == 1
    assert "agents: no agents are defined" in err


@pytest.mark.parametrize(
    ("line", "complaint"),
    [
        ('default = "yes"', "agents.bot.default: Input should be a valid boolean"),
        ("default = 1", "agents.bot.default: Input should be a valid boolean"),
        ('max_steps = "3"', "agents.bot.max_steps: Input should be a valid integer"),
        ("max_steps = 2.5", "agents.bot.max_steps: Input should be a valid integer"),
        ('model_settings = { delay = "slow" }', "agents.bot.model_settings.delay: must be a number of seconds"),
    ],
)
def test_agent_values_of_the_wrong_type_are_not_coerced(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], line: str, complaint: str
) -> None:
    status, err = check(tmp_path, f'[agents.bot]\nmodel = "builtin:echo"\n{line}\n', capsys)
    assert status == 1
    assert complaint in err


def test_server_values_are_strict_but_an_integer_is_a_number_of_seconds(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    agent = '[agents.bot]\nmodel = "builtin:echo"\n'
    status, err = check(tmp_path, f'[server]\nkeepalive_seconds = "15"\n{agent}', capsys)
    assert (status, "server.keepalive_seconds: Input should be a valid number" in err) == (1, True)
    assert check(tmp_path, f"[server]\nkeepalive_seconds = 15\n{agent}", capsys)[0] == 0
    assert check(tmp_path, f'[server]\nfile_url_schemes = ["data"]\n{agent}', capsys)[0] == 0


def test_a_model_without_a_provider_says_how_to_write_it(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    status, err = check(tmp_path, '[agents.bot]\nmodel = "gpt-4.1"\n', capsys)
    assert status == 1
    assert "agents.bot.model: write the model as provider:model, e.g. openai:gpt-4.1" in err
    assert "pattern" not in err


def test_a_run_log_flush_longer_than_a_third_of_the_lease_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    agent = '[agents.bot]\nmodel = "builtin:echo"\n'
    status, err = check(tmp_path, f"[server]\nrun_log_flush_seconds = 1.5\n{agent}", capsys)
    assert (status, "run_log_flush_seconds must be at most a third of run_log_lease_seconds" in err) == (1, True)
    assert check(tmp_path, f"[server]\nrun_log_flush_seconds = 0.2\n{agent}", capsys)[0] == 0


@pytest.mark.parametrize(
    ("path", "complaint"),
    [
        ('"copilotkit"', "copilotkit.path: String should match pattern"),
        ('"/copilotkit/"', "copilotkit.path: String should match pattern"),
        ('"/agents/copilotkit"', "copilotkit.path: '/agents/copilotkit' is under a path chatgate serves"),
        ('"/ag-ui"', "copilotkit.path: '/ag-ui' is under a path chatgate serves"),
    ],
)
def test_a_copilotkit_path_must_be_a_path_of_its_own(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], path: str, complaint: str
) -> None:
    status, err = check(tmp_path, f'[copilotkit]\npath = {path}\n[agents.bot]\nmodel = "builtin:echo"\n', capsys)
    assert status == 1
    assert complaint in err

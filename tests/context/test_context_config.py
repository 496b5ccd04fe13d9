"""``[agents.NAME.context]`` mistakes are refused by ``check-config`` with the key path and the fix."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.config.test_config_mistakes import check

OLLAMA = '[providers.local]\nkind = "ollama"\n'
ANTHROPIC = '[providers.claude]\nkind = "anthropic"\napi_key = "sk-ant-test"\n'


@pytest.mark.parametrize(
    ("agent", "complaint"),
    [
        ('model = "builtin:echo"\ncontext = { window = 0 }', 'window is a number of tokens above 0, or "auto"'),
        ('model = "builtin:echo"\ncontext = { window = "big" }', "agents.bot.context.window"),
        ('model = "builtin:echo"\ncontext = { window = 10, strategy = "forget" }', "agents.bot.context.strategy"),
        ('model = "builtin:echo"\ncontext = { strategy = "summarize" }', '"summarize" needs a window'),
        (
            'model = "builtin:echo"\ncontext = { window = 900, summary_model = "local:gemma3" }',
            'agents.bot.context.summary_model: only used with strategy = "summarize"',
        ),
        (
            'model = "builtin:echo"\ncontext = { window = 900, strategy = "summarize", summary_model = "nowhere:m" }',
            "agents.bot.context.summary_model: ",
        ),
        (
            'model = "builtin:echo"\ncontext = { window = 900, strategy = "summarize", summary_model = "gemma3" }',
            "agents.bot.context.summary_model",
        ),
        ('model = "builtin:echo"\ncontext = { window = "auto" }', "the builtin provider cannot tell"),
        ('model = "claude:claude-sonnet-4"\ncontext = { window = "auto" }', "the anthropic provider cannot tell"),
        (
            'model = "local:gemma3"\nmodel_settings = { max_tokens = 2048 }\ncontext = { window = 1024 }',
            "agents.bot.context.window: 1024 tokens leave no room for the prompt after the answer's 2048",
        ),
    ],
)
def test_a_context_mistake_names_its_key(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], agent: str, complaint: str
) -> None:
    status, err = check(tmp_path, f"{OLLAMA}{ANTHROPIC}[agents.bot]\n{agent}\n", capsys)
    assert status == 1
    assert complaint in err


def test_a_window_on_ollama_is_accepted(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    agent = 'model = "local:gemma3"\ncontext = { window = "auto", strategy = "fail" }'
    status, err = check(tmp_path, f"{OLLAMA}[agents.bot]\n{agent}\n", capsys)
    assert status == 0, err


def test_summarize_with_a_summary_model_on_another_provider_is_accepted(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    context = 'context = { window = "auto", strategy = "summarize", summary_model = "claude:claude-haiku-4" }'
    status, err = check(tmp_path, f'{OLLAMA}{ANTHROPIC}[agents.bot]\nmodel = "local:gemma3"\n{context}\n', capsys)
    assert status == 0, err

"""``[providers.NAME]`` tables, the env-configured built-in names, and agents' model settings."""

from pathlib import Path
from typing import Any

import httpx
import pytest

from chatgate.config import AgentConfig, Config, parse_config, resolve_provider
from chatgate.errors import ConfigError
from chatgate.providers import build_provider
from chatgate.providers.anthropic import AnthropicProvider
from chatgate.providers.ollama import OllamaProvider
from chatgate.providers.openai import OpenAIProvider


def problems(data: dict[str, Any], environ: dict[str, str] | None = None) -> list[str]:
    with pytest.raises(ConfigError) as caught:
        parse_config(data, base_dir=Path.cwd(), environ=environ or {})
    return caught.value.problems


def agent(model: str, **settings: Any) -> dict[str, Any]:
    return {"agents": {"a": {"model": model, "model_settings": settings}}}


def test_a_provider_table_with_env_key_timeouts_and_retries() -> None:
    data = {
        "providers": {
            "vllm": {
                "kind": "openai",
                "base_url": "http://gpu-box:8000/v1",
                "api_key": "${env:VLLM_KEY}",
                "headers": {"x-team": "blue"},
                "timeouts": {"connect": 3, "first_token": 60, "idle": 20},
                "retries": 4,
            }
        },
        **agent("vllm:llama-3.1-8b", temperature=0.3),
    }
    config = parse_config(data, base_dir=Path.cwd(), environ={"VLLM_KEY": "k-123"})
    table = config.providers["vllm"]
    assert (table.kind, table.api_key, table.retries, table.timeouts.idle) == ("openai", "k-123", 4, 20)


def test_an_agent_naming_an_unknown_provider_is_named_by_key_path() -> None:
    (problem,) = problems(agent("nope:model"))
    assert problem.startswith("agents.a.model: unknown provider 'nope'")
    assert "[providers.nope]" in problem


def test_bad_provider_tables_name_the_key() -> None:
    found = problems({"providers": {"up": {"kind": "gemini", "base_url": "ftp://x", "retries": -1, "bogus": 1}}})
    assert any(p.startswith("providers.up.kind:") for p in found)
    assert any(p.startswith("providers.up.base_url:") for p in found)
    assert any(p.startswith("providers.up.retries:") for p in found)
    assert "providers.up.bogus: unknown key" in found


def test_openai_needs_its_key_unless_a_base_url_points_elsewhere() -> None:
    (problem,) = problems(agent("openai:gpt-4.1"))
    assert problem == "agents.a.model: provider 'openai' needs OPENAI_API_KEY set, or a [providers.openai] table"
    config = Config()
    assert resolve_provider(config, "openai", {"OPENAI_API_KEY": "sk"}).api_key == "sk"
    local = resolve_provider(config, "openai", {"OPENAI_BASE_URL": "http://127.0.0.1:1234/v1"})
    assert (local.base_url, local.api_key) == ("http://127.0.0.1:1234/v1", None)


def test_anthropic_needs_its_key() -> None:
    (problem,) = problems(agent("anthropic:claude-sonnet-4-5"))
    assert "ANTHROPIC_API_KEY" in problem
    assert resolve_provider(Config(), "anthropic", {"ANTHROPIC_API_KEY": "a"}).kind == "anthropic"


def test_anthropic_takes_its_base_url_from_the_environment() -> None:
    default = resolve_provider(Config(), "anthropic", {"ANTHROPIC_API_KEY": "a"})
    proxied = resolve_provider(
        Config(), "anthropic", {"ANTHROPIC_API_KEY": "a", "ANTHROPIC_BASE_URL": "http://gw:8080"}
    )
    assert proxied.base_url == "http://gw:8080"
    assert default.base_url != proxied.base_url


def test_ollama_works_without_env_and_takes_a_bare_ollama_host() -> None:
    assert resolve_provider(Config(), "ollama", {}).base_url == "http://127.0.0.1:11434"
    assert resolve_provider(Config(), "ollama", {"OLLAMA_HOST": "ollama:11434"}).base_url == "http://ollama:11434"
    parse_config(agent("ollama:qwen3:8b", think=True, num_ctx=8192), base_dir=Path.cwd(), environ={})


def test_a_table_overrides_a_built_in_name() -> None:
    table = {"kind": "openai", "base_url": "http://proxy/v1", "retries": 0}
    config = parse_config({"providers": {"openai": table}, **agent("openai:gpt-4.1")}, base_dir=Path.cwd(), environ={})
    assert resolve_provider(config, "openai", {}).base_url == "http://proxy/v1"


def test_model_settings_are_checked_against_the_provider_kind() -> None:
    found = problems(agent("ollama:m", delay=1, temperature="hot", think="very"))
    assert found[0].startswith("agents.a.model_settings.delay: not a setting of ollama providers")
    assert "agents.a.model_settings.temperature: must be a number" in found
    assert "agents.a.model_settings.think: must be true, false, 'low', 'medium' or 'high'" in found


def test_the_built_in_models_own_settings_still_work() -> None:
    parse_config(agent("builtin:echo", delay=0.01, reasoning=True, fail_after=3), base_dir=Path.cwd(), environ={})
    parse_config(agent("builtin:echo", delay=1), base_dir=Path.cwd(), environ={})  # an integer is a number


def test_the_built_in_models_settings_are_checked_like_every_other_kind() -> None:
    found = problems(agent("builtin:echo", delay="slow", reasoning="yes", fail_after=-1, temperature=0.2))
    assert found == [
        "agents.a.model_settings.delay: must be a number of seconds, 0 or more",
        "agents.a.model_settings.reasoning: must be true or false",
        "agents.a.model_settings.fail_after: must be an integer, 0 or more",
        "agents.a.model_settings.temperature: not a setting of the built-in model"
        " (known: delay, fail_after, history, reasoning)",
    ]


async def test_build_provider_picks_the_kinds_implementation() -> None:
    config = parse_config(
        {"providers": {"vllm": {"kind": "openai", "base_url": "http://x/v1"}}, **agent("vllm:m")},
        base_dir=Path.cwd(),
        environ={},
    )
    async with httpx.AsyncClient() as client:
        assert isinstance(build_provider(AgentConfig(model="vllm:m"), config, client), OpenAIProvider)
        assert isinstance(build_provider(AgentConfig(model="ollama:m"), config, client), OllamaProvider)
        anthropic = Config(providers={"a": {"kind": "anthropic", "api_key": "k"}})  # type: ignore[dict-item]
        assert isinstance(build_provider(AgentConfig(model="a:m"), anthropic, client), AnthropicProvider)
        with pytest.raises(ConfigError):
            build_provider(AgentConfig(model="nope:m"), config, client)

"""The public API is small and exact, as httpx's: what ``chatgate`` exports and nothing else."""

import importlib.metadata
import subprocess
import sys
import tomllib
from pathlib import Path

import chatgate

PYPROJECT = Path(__file__).parent.parent / "pyproject.toml"

PUBLIC = {
    "create_app",
    "client",
    "Client",
    "Conversation",
    "Config",
    "AgentConfig",
    "KeyConfig",
    "ProviderConfig",
    "ServerSettings",
    "StoreSettings",
    "SystemPromptConfig",
    "default_config",
    "load_config",
    "parse_config",
    "Message",
    "SystemMessage",
    "UserMessage",
    "AssistantMessage",
    "ToolMessage",
    "TextPart",
    "FilePart",
    "ReasoningPart",
    "ToolCallPart",
    "SourcePart",
    "ChatgateError",
    "ConfigError",
    "RequestError",
    "ProviderError",
}


def test_the_public_surface_is_exactly_this() -> None:
    assert set(chatgate.__all__) == PUBLIC
    assert len(chatgate.__all__) == len(PUBLIC)
    for name in PUBLIC - {"Message"}:  # Message is a union of the four message types
        assert getattr(chatgate, name).__name__ == name
    assert chatgate.UserMessage in chatgate.Message.__args__


def test_dir_lists_the_public_names_before_their_first_use() -> None:
    # In a fresh interpreter: here the names above are imported already, so they are plain attributes.
    code = "import chatgate; print(' '.join(sorted(set(chatgate.__all__) - set(dir(chatgate)))))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.split() == []


def test_importing_the_config_does_not_load_the_server() -> None:
    code = "import sys, chatgate.config; print('chatgate.web' in sys.modules, 'chatgate.run' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["False", "False"]


def test_the_version_is_the_installed_package_s() -> None:
    installed = importlib.metadata.version("chatgate")
    assert chatgate.__version__ == installed == tomllib.loads(PYPROJECT.read_text())["project"]["version"]
    out = subprocess.run([sys.executable, "-m", "chatgate.serve.cli", "--version"], capture_output=True, text=True)
    assert (out.returncode, out.stdout.strip()) == (0, f"chatgate {installed}")

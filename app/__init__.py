"""chatgate: chat frontends to any LLM, with the operator in charge of the system prompt.

The public API is what this module exports (``__all__``), as in httpx: ``create_app`` (the ASGI app),
``client`` (the Python API for scripts and tests), the config types and loaders, the history types and
the exceptions. Everything else is private and may change without notice: the subpackages and the other
modules are the implementation (docs/architecture.md draws them). Protocol adapters also build on
``chatgate.protocol``, ``chatgate.run_input``, ``chatgate.events`` and ``chatgate.history``.

This package (``app/`` in the repository) is the protocol-neutral core. UI protocols live in
``chatgate.adapters`` (``adapters/`` in the repository) and are found through the ``chatgate.protocols``
entry-point group, so the core never imports them.

Names are imported on first use, so ``import chatgate.config`` does not load the server.
``chatgate.__version__`` is the installed package's version, read from its metadata.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from chatgate.config import (
        AgentConfig,
        Config,
        KeyConfig,
        ProviderConfig,
        ServerSettings,
        StoreSettings,
        SystemPromptConfig,
        default_config,
        load_config,
        parse_config,
    )
    from chatgate.errors import ChatgateError, ConfigError, ProviderError, RequestError
    from chatgate.history import (
        AssistantMessage,
        FilePart,
        Message,
        ReasoningPart,
        SourcePart,
        SystemMessage,
        TextPart,
        ToolCallPart,
        ToolMessage,
        UserMessage,
    )
    from chatgate.scripting import Client, Conversation, client
    from chatgate.web import create_app

__all__ = [
    "AgentConfig",
    "AssistantMessage",
    "ChatgateError",
    "Client",
    "Config",
    "ConfigError",
    "Conversation",
    "FilePart",
    "KeyConfig",
    "Message",
    "ProviderConfig",
    "ProviderError",
    "ReasoningPart",
    "RequestError",
    "ServerSettings",
    "SourcePart",
    "StoreSettings",
    "SystemMessage",
    "SystemPromptConfig",
    "TextPart",
    "ToolCallPart",
    "ToolMessage",
    "UserMessage",
    "client",
    "create_app",
    "default_config",
    "load_config",
    "parse_config",
]

_HOMES = {
    **dict.fromkeys(
        [
            "AgentConfig",
            "Config",
            "KeyConfig",
            "ProviderConfig",
            "ServerSettings",
            "StoreSettings",
            "SystemPromptConfig",
            "default_config",
            "load_config",
            "parse_config",
        ],
        "chatgate.config",
    ),
    **dict.fromkeys(["ChatgateError", "ConfigError", "ProviderError", "RequestError"], "chatgate.errors"),
    **dict.fromkeys(
        [
            "AssistantMessage",
            "FilePart",
            "Message",
            "ReasoningPart",
            "SourcePart",
            "SystemMessage",
            "TextPart",
            "ToolCallPart",
            "ToolMessage",
            "UserMessage",
        ],
        "chatgate.history",
    ),
    **dict.fromkeys(["Client", "Conversation", "client"], "chatgate.scripting"),
    "create_app": "chatgate.web",
}
"""Where each public name lives."""


def __getattr__(name: str) -> Any:
    if name == "__version__":
        from chatgate.version import installed_version

        globals()[name] = installed_version()
        return globals()[name]
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'chatgate' has no attribute {name!r}")
    value = getattr(importlib.import_module(home), name)
    globals()[name] = value  # once imported, a plain attribute
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})

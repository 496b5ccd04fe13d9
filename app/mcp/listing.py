"""``chatgate check-config FILE --list-tools SERVER``: what a server offers, as a model would see it."""

from __future__ import annotations

import asyncio

from chatgate.config import Config
from chatgate.mcp.connection import list_tools_once
from chatgate.mcp.naming import clean_description, name_problem, offered_name, schema_problem

__all__ = ["tool_listing"]


def tool_listing(config: Config, server: str) -> list[str]:
    """One line per tool of ``server``: its offered name and description, or why it is not offered.

    Raises ``KeyError`` for an unknown server and whatever connecting raised when it cannot be reached.
    """
    settings = config.mcp_servers[server]
    tools = asyncio.run(list_tools_once(server, settings))
    lines = []
    for tool in tools:
        problem = name_problem(server, tool.name) or schema_problem(tool.input_schema)
        if problem is not None:
            lines.append(f"{tool.name[:80]!r}: not offered: {problem}")
            continue
        description = clean_description(tool.description).split("\n", 1)[0]
        lines.append(f"{offered_name(server, tool.name)}: {description}")
    return lines

"""Tools from Model Context Protocol servers: a second kind of server tool (docs/tools.md).

``MCPServers`` owns one session per configured server for the app's lifespan; ``AgentTools`` gives the
runner an agent's tools, Python and MCP alike, to offer, approve and call the same way. The SDK is
imported only by an app that has MCP servers (it takes about a second), so names load on first use.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from chatgate.mcp.connection import MCPConnection, MCPUnavailable, list_tools_once, root_cause
    from chatgate.mcp.listing import tool_listing
    from chatgate.mcp.servers import MCPServers
    from chatgate.mcp.tools import AgentTools, MCPTool

__all__ = [
    "AgentTools",
    "MCPConnection",
    "MCPServers",
    "MCPTool",
    "MCPUnavailable",
    "list_tools_once",
    "root_cause",
    "tool_listing",
]

_HOMES = {
    "AgentTools": "tools",
    "MCPConnection": "connection",
    "MCPServers": "servers",
    "MCPTool": "tools",
    "MCPUnavailable": "connection",
    "list_tools_once": "connection",
    "root_cause": "connection",
    "tool_listing": "listing",
}


def __getattr__(name: str) -> Any:
    if name not in _HOMES:
        raise AttributeError(f"module 'chatgate.mcp' has no attribute {name!r}")
    return getattr(importlib.import_module(f"chatgate.mcp.{_HOMES[name]}"), name)

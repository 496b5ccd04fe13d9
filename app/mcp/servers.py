"""The app's MCP servers: one connection each, started with the app and stopped at shutdown.

Servers are bound at start, like Redis and the store: a config reload that adds, removes or changes a
``[mcp_servers.NAME]`` table takes effect on restart (an agent naming a server that was not started
gets none of its tools, and the log says so). Which tools an agent gets does follow reloads.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from chatgate.config import AgentConfig, Config
from chatgate.run import Tool
from chatgate.telemetry import MCPMetrics

if TYPE_CHECKING:
    from chatgate.mcp.connection import MCPConnection

__all__ = ["MCPServers"]

logger = logging.getLogger("chatgate.mcp")


class MCPServers:
    """Every configured MCP server's connection in this process."""

    def __init__(self, config: Config, metrics: MCPMetrics | None = None) -> None:
        self.connections: dict[str, MCPConnection] = {}
        if config.mcp_servers:  # the SDK loads only when there is a server to talk to
            from chatgate.mcp.connection import MCPConnection

            self.connections = {name: MCPConnection(name, server) for name, server in config.mcp_servers.items()}
        self.metrics = metrics

    def start(self) -> None:
        """Start connecting to every server (in the background: the app does not wait for them)."""
        for connection in self.connections.values():
            connection.start()

    async def aclose(self) -> None:
        """Close every session and stop every stdio server's process."""
        await asyncio.gather(*(connection.aclose() for connection in self.connections.values()))

    def agent_tools(self, name: str, agent: AgentConfig, server_tools: Mapping[str, Tool]) -> Mapping[str, Tool]:
        """The agent's tools: ``server_tools`` plus those of its MCP servers, live."""
        if not agent.mcp:
            return server_tools
        from chatgate.mcp.tools import AgentTools

        chosen: dict[str, Any] = {}
        for server, choice in agent.mcp.items():
            connection = self.connections.get(server)
            if connection is None:
                logger.warning("agent %r: MCP server %r was not started; restart to use it", name, server)
                continue
            chosen[server] = (connection, choice)
        return AgentTools(server_tools, chosen, self.metrics)

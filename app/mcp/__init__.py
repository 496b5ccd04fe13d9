"""Tools from Model Context Protocol servers: a second kind of server tool (docs/tools.md).

``MCPServers`` owns one session per configured server for the app's lifespan; ``AgentTools`` gives the
runner an agent's tools, Python and MCP alike, to offer, approve and call the same way.
"""

from chatgate.mcp.connection import MCPConnection, MCPUnavailable, list_tools_once
from chatgate.mcp.metrics import MCPMetrics
from chatgate.mcp.servers import MCPServers
from chatgate.mcp.tools import AgentTools, MCPTool

__all__ = ["AgentTools", "MCPConnection", "MCPMetrics", "MCPServers", "MCPTool", "MCPUnavailable", "list_tools_once"]

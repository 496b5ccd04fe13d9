"""MCP tools as server tools: offered, approved and called by the runner like any other.

``AgentTools`` is the mapping the runner reads an agent's tools from: its Python server tools plus,
live, the tools its MCP servers list now (filtered by ``[agents.NAME.mcp.SERVER]``). A name of an
agent's MCP server (``SERVER__...``) that the server does not offer now (it left the list, is
excluded, or the server is down) still resolves, to a tool whose call says so: such a call is never
mistaken for one the frontend runs. Before a run offers them, ``ready`` waits for servers still
connecting (at start, or after a session was lost): a run never silently goes without a server's tools.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from chatgate.config import AgentMCPConfig
from chatgate.mcp.connection import MCPConnection, MCPUnavailable
from chatgate.mcp.naming import (
    clean_description,
    name_problem,
    offered_name,
    schema_problem,
    selected,
    server_of,
    wants_approval,
)
from chatgate.mcp.results import outcome_of
from chatgate.run import LiveTools, Tool, ToolOutcome, ToolsUnavailable
from chatgate.run_input import ToolDefinition
from chatgate.telemetry import MCPMetrics

__all__ = ["AgentTools", "MCPTool"]

logger = logging.getLogger("chatgate.mcp")


@dataclass(frozen=True, slots=True)
class MCPTool:
    """One tool of one MCP server, as an agent gets it."""

    name: str
    tool: str
    description: str
    parameters: Mapping[str, Any]
    connection: MCPConnection
    requires_approval: bool
    metrics: MCPMetrics | None = None
    offered: bool = True

    @property
    def definition(self) -> ToolDefinition:
        """How the tool is offered to the model."""
        return ToolDefinition(self.name, self.description, self.parameters)

    @property
    def trace_attributes(self) -> Mapping[str, str]:
        """Its ``execute_tool`` span names the server and the server's own tool name (docs/observability.md)."""
        return {
            "gen_ai.tool.type": "extension",
            "mcp.method.name": "tools/call",
            "chatgate.mcp.server": self.connection.name,
            "chatgate.mcp.tool": self.tool,
        }

    async def call(self, arguments_json: str) -> ToolOutcome:
        """Call the tool on its server; every failure is an error outcome the model reads."""
        server = self.connection.name
        if not self.offered:
            return ToolOutcome(f"{self.name} is not offered by the MCP server {server!r} now.", is_error=True)
        try:
            arguments = json.loads(arguments_json or "{}")
        except ValueError:
            arguments = None
        if not isinstance(arguments, dict):
            return ToolOutcome(f"Invalid arguments for {self.name}: expected a JSON object", is_error=True)
        started = time.perf_counter()
        error_kind = ""
        try:
            result = await self.connection.call(self.tool, arguments)
        except TimeoutError:
            error_kind = "timeout"
            timeout = self.connection.config.timeout_seconds
            logger.warning("mcp server %r: tool %r timed out after %ss", server, self.tool, timeout)
            outcome = ToolOutcome(f"{self.name} timed out after {timeout:g} seconds", is_error=True)
        except MCPUnavailable as exc:
            error_kind = "unavailable"
            logger.warning("mcp server %r: tool %r not run: %s", server, self.tool, exc)
            outcome = ToolOutcome(f"{self.name} failed: the MCP server {server!r} is unavailable", is_error=True)
        except Exception as exc:
            error_kind = "protocol"
            logger.warning("mcp server %r: tool %r failed: %s: %s", server, self.tool, type(exc).__name__, exc)
            outcome = ToolOutcome(f"{self.name} failed: {str(exc)[:500]}", is_error=True)
        else:
            settings = self.connection.config
            outcome = outcome_of(result, settings.max_output_chars, settings.max_image_bytes)
            error_kind = "tool" if outcome.is_error else ""
        if self.metrics is not None:
            self.metrics.called(server, self.tool, time.perf_counter() - started, error_kind)
        return outcome


def _unoffered(name: str, connection: MCPConnection, choice: AgentMCPConfig) -> MCPTool:
    tool = name.partition("__")[2]
    return MCPTool(name, tool, "", {}, connection, wants_approval(tool, choice), offered=False)


class AgentTools(LiveTools):
    """An agent's tools by offered name: fixed Python server tools, then its MCP servers' current tools."""

    def __init__(
        self,
        server_tools: Mapping[str, Tool],
        mcp: Mapping[str, tuple[MCPConnection, AgentMCPConfig]],
        metrics: MCPMetrics | None = None,
    ) -> None:
        self._fixed = server_tools
        self._mcp = mcp
        self._metrics = metrics
        self._cache: tuple[tuple[int, ...], dict[str, Tool]] | None = None

    async def ready(self) -> None:
        """Wait for servers still connecting, each up to its ``connect_wait_seconds``.

        One that is still not connected ends the run (``ToolsUnavailable``, code ``mcp_unavailable``)
        unless the operator marked it ``optional``: then the run goes on with what it last listed.
        """
        waiting = [connection for connection, _ in self._mcp.values() if not connection.connected]
        if not waiting:
            return
        connected = await asyncio.gather(*(connection.wait_connected() for connection in waiting))
        down = [connection for connection, up in zip(waiting, connected, strict=True) if not up]
        for connection in down:
            wait = connection.config.connect_wait_seconds
            kind = "optional, the run goes on without it" if connection.config.optional else "the run ends"
            logger.warning("mcp server %r: not connected after %gs; %s", connection.name, wait, kind)
        required = [connection.name for connection in down if not connection.config.optional]
        if required:
            names = ", ".join(repr(name) for name in required)
            servers = "MCP server" if len(required) == 1 else "MCP servers"
            raise ToolsUnavailable(
                f"The tools of the {servers} {names} are not available now; try again shortly.", "mcp_unavailable"
            )

    def _current(self) -> dict[str, Tool]:
        """Every offered tool, rebuilt only when a server's list changed."""
        stamp = tuple(connection.listings for connection, _ in self._mcp.values())
        if self._cache is not None and self._cache[0] == stamp:
            return self._cache[1]
        tools: dict[str, Tool] = dict(self._fixed)
        for server, (connection, choice) in self._mcp.items():
            for listed in connection.tools.values():
                if not selected(listed.name, choice):
                    continue
                problem = name_problem(server, listed.name) or schema_problem(listed.input_schema)
                if problem is not None:
                    logger.warning("mcp server %r: tool %r not offered: %s", server, listed.name[:80], problem)
                    continue
                name = offered_name(server, listed.name)
                parameters = {k: v for k, v in listed.input_schema.items() if k != "$schema"}
                tools.setdefault(
                    name,
                    MCPTool(
                        name,
                        listed.name,
                        clean_description(listed.description),
                        parameters,
                        connection,
                        wants_approval(listed.name, choice),
                        self._metrics,
                    ),
                )
        self._cache = (stamp, tools)
        return tools

    def __getitem__(self, name: str) -> Tool:
        tools = self._current()
        if name in tools:
            return tools[name]
        server = server_of(name)
        if server is not None and server in self._mcp:
            connection, choice = self._mcp[server]
            return _unoffered(name, connection, choice)
        raise KeyError(name)

    def __contains__(self, name: object) -> bool:
        if not isinstance(name, str):
            return False
        server = server_of(name)
        return name in self._current() or (server is not None and server in self._mcp)

    def __bool__(self) -> bool:
        # An agent with MCP servers has server tools even while they list none (a server is down).
        return bool(self._mcp) or bool(self._fixed)

    def __iter__(self) -> Iterator[str]:
        return iter(self._current())

    def __len__(self) -> int:
        return len(self._current())

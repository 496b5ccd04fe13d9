"""MCP tools without a server: the config tables, the names and text a model sees, the result cap,
and an agent's live tool list. The real servers are exercised in tests/e2e/test_mcp_tools.py."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from mcp import types

from chatgate.config import AgentMCPConfig, MCPServerConfig
from chatgate.mcp.connection import MCPConnection
from chatgate.mcp.naming import clean_description, name_problem
from chatgate.mcp.results import outcome_of
from chatgate.mcp.tools import AgentTools
from chatgate.run import ToolsUnavailable
from chatgate.serve.cli import main
from tests.mcp.real_servers import time_stdio


def check(tmp_path: Path, text: str, capsys: pytest.CaptureFixture[str], *flags: str) -> tuple[int, str]:
    path = tmp_path / "chatgate.toml"
    path.write_text(text)
    status = main(["check-config", str(path), *flags])
    captured = capsys.readouterr()
    return status, captured.out + captured.err


AGENT = '[agents.bot]\nmodel = "builtin:echo"\n'


@pytest.mark.parametrize(
    ("table", "problem"),
    [
        ('[mcp_servers.a]\ncommand = ["x"]\nurl = "http://h/mcp"\n', "give exactly one of command"),
        ("[mcp_servers.a]\ntimeout_seconds = 3\n", "give exactly one of command"),
        ('[mcp_servers.a]\ncommand = ["x"]\nheaders = { a = "b" }\n', "headers are for a url server"),
        ('[mcp_servers.a]\nurl = "http://h/mcp"\nenv = { A = "b" }\n', "env and cwd are for a command server"),
        ('[mcp_servers.a]\nurl = "ftp://h/mcp"\n', "mcp_servers.a.url"),
        ("[mcp_servers.a]\ncommand = []\n", "mcp_servers.a.command"),
        ('[mcp_servers.a]\nurl = "http://h/mcp"\ntimeout_seconds = 0\n', "mcp_servers.a.timeout_seconds"),
        ('[mcp_servers.a]\nurl = "http://h/mcp"\nconnect_wait_seconds = -1\n', "mcp_servers.a.connect_wait_seconds"),
        ('[mcp_servers.a]\nurl = "http://h/mcp"\noptional = "yes"\n', "mcp_servers.a.optional"),
        ('[mcp_servers.a__b]\nurl = "http://h/mcp"\n', "MCP server names"),
        ('[mcp_servers.a_]\nurl = "http://h/mcp"\n', "MCP server names"),
        ("[agents.bot.mcp.nowhere]\n", "agents.bot.mcp.nowhere: no [mcp_servers.nowhere] table"),
        (
            '[mcp_servers.files]\nurl = "http://h/mcp"\n[agents.bot.mcp.files]\n'
            '[agents.bot.tools.files__read]\nfunction = "tests.sample_tools:record"\n',
            "agents.bot.tools.files__read: names starting with 'files__'",
        ),
        ("[agents.bot.mcp.x]\nrequires_approval = true\n", "agents.bot.mcp.x.requires_approval"),
    ],
)
def test_check_config_names_each_mcp_mistake(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], table: str, problem: str
) -> None:
    status, output = check(tmp_path, AGENT + table, capsys)
    assert status == 1
    assert problem in output


def test_check_config_lists_a_real_servers_tools(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    text = f"[mcp_servers.time]\ncommand = {time_stdio()!r}\n".replace("'", '"') + AGENT
    status, output = check(tmp_path, text, capsys, "--list-tools", "time")
    assert status == 0, output
    assert "time__get_current_time: Get current time in a specific timezone" in output
    assert "time__convert_time:" in output


def test_check_config_says_a_server_cannot_be_reached(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    text = '[mcp_servers.down]\nurl = "http://127.0.0.1:9/mcp"\ntimeout_seconds = 2\n' + AGENT
    status, output = check(tmp_path, text, capsys, "--list-tools", "down")
    assert status == 1
    assert "mcp_servers.down: cannot list its tools: ConnectError" in output


def test_names_and_descriptions_are_checked_before_a_model_sees_them() -> None:
    assert name_problem("files", "read_file") is None
    assert name_problem("files", "read.file") is not None
    assert name_problem("files", "x" * 60) is not None  # files__xxx... is over 64 characters
    assert name_problem("files", "") is not None
    hostile = "Reads a file.\u202e\u200b\x1b[31m" + "A" * 5000
    cleaned = clean_description(hostile)
    assert len(cleaned) == 1024 and cleaned.endswith("…")
    assert not any(char in cleaned for char in "\u202e\u200b\x1b")


def test_a_result_is_capped_with_a_marker_and_an_error_stays_an_error() -> None:
    result = types.CallToolResult(content=[types.TextContent(text="y" * 5000)], is_error=True)
    outcome = outcome_of(result, 1000)
    assert outcome.is_error
    assert outcome.content == "y" * 1000 + "\n[chatgate: output truncated: 1000 of 5000 characters shown]"
    image = types.CallToolResult(content=[types.ImageContent(data="AAAA", mime_type="image/png")])
    shown = outcome_of(image, 1000, image_limit=3)
    assert (shown.content, shown.images) == ("[image: image/png, 3 bytes]", (("image/png", "AAAA"),))
    capped = outcome_of(image, 1000, image_limit=2)
    assert capped.content == "[image: image/png, 3 bytes: not shown, over the result's 2-byte limit]"
    assert capped.images == ()
    two = types.CallToolResult(content=image.content * 2)  # the limit is for one result's images together
    assert outcome_of(two, 1000, image_limit=5).images == (("image/png", "AAAA"),)
    svg = types.CallToolResult(content=[types.ImageContent(data="AAAA", mime_type="image/svg+xml")])
    assert outcome_of(svg, 1000, image_limit=100).images == ()
    broken = types.CallToolResult(content=[types.ImageContent(data="A!A=", mime_type="image/png")])
    assert outcome_of(broken, 1000, image_limit=100).images == ()
    structured = types.CallToolResult(content=[], structured_content={"a": 1})
    assert (outcome_of(structured, 1000).content, outcome_of(structured, 1000).value) == ('{"a":1}', {"a": 1})


def _tool(name: str) -> types.Tool:
    return types.Tool(name=name, description=f"{name} things", input_schema={"type": "object"})


async def test_an_agents_tools_follow_the_servers_list_and_a_gone_tool_is_never_the_frontends() -> None:
    connection = MCPConnection("files", MCPServerConfig(url="http://127.0.0.1:9/mcp"))
    choice = AgentMCPConfig(include=["read_*", "write_*"], exclude=["write_secret"], requires_approval=["write_*"])
    tools = AgentTools({}, {"files": (connection, choice)})
    assert tools and list(tools) == []  # the server lists nothing yet: still an agent with server tools

    connection.tools = {name: _tool(name) for name in ("read_file", "write_file", "write_secret", "delete")}
    connection.listings += 1
    assert sorted(tools) == ["files__read_file", "files__write_file"]
    assert not tools["files__read_file"].requires_approval
    assert tools["files__write_file"].requires_approval

    huge = types.Tool(name="read_all", input_schema={"type": "object", "description": "z" * 70_000})
    connection.tools = {"read_file": _tool("read_file"), "read_all": huge}  # list_changed, relisted
    connection.listings += 1
    assert list(tools) == ["files__read_file"]  # read_all's 70 kB schema is never offered
    gone = tools["files__write_file"]  # a call made before the change
    assert gone.requires_approval  # still needs its human: the globs decide, not the list
    outcome = await asyncio.wait_for(gone.call("{}"), 5)
    assert outcome.is_error and "not offered" in outcome.content
    assert "files__delete" in tools and "other__delete" not in tools


async def test_ready_ends_a_run_only_for_a_required_server_that_is_not_connected() -> None:
    closed = "http://127.0.0.1:9/mcp"  # never started here: neither server connects
    files = MCPConnection("files", MCPServerConfig(url=closed, connect_wait_seconds=0))
    spare = MCPConnection("spare", MCPServerConfig(url=closed, connect_wait_seconds=0, optional=True))
    choice = AgentMCPConfig()
    with pytest.raises(ToolsUnavailable) as refused:
        await AgentTools({}, {"files": (files, choice), "spare": (spare, choice)}).ready()
    assert refused.value.code == "mcp_unavailable"
    message = "The tools of the MCP server 'files' are not available now; try again shortly."
    assert refused.value.public_message == message
    await AgentTools({}, {"spare": (spare, choice)}).ready()  # optional alone: the run goes on without it

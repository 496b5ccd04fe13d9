"""What the model sees of an MCP server's tools: collision-free names and checked descriptions.

An MCP tool ``read_file`` of the server ``files`` is offered as ``files__read_file``. Server names have
no ``__`` and no trailing ``_`` (``chatgate.config.schema.MCP_SERVER_NAME``), so an offered name splits
one way only, two servers never offer the same name, and a server tool of that shape is refused by
``check-config``. A server's own tool name must be 1-64 letters, digits, ``_`` or ``-`` and the offered
name at most 64 characters (what the OpenAI and Anthropic APIs accept); other tools are not offered.
An input schema must be an object schema of at most ``MAX_SCHEMA_BYTES`` as JSON. Descriptions are data
from the server: control and invisible format characters are removed and the text is cut to
``MAX_DESCRIPTION_CHARS``.
"""

from __future__ import annotations

import fnmatch
import re
import unicodedata
from collections.abc import Mapping, Sequence
from typing import Any

from chatgate.config import AgentMCPConfig
from chatgate.strict_json import dump_json

__all__ = [
    "MAX_DESCRIPTION_CHARS",
    "MAX_NAME_CHARS",
    "MAX_SCHEMA_BYTES",
    "SEPARATOR",
    "clean_description",
    "name_problem",
    "offered_name",
    "schema_problem",
    "selected",
    "server_of",
    "wants_approval",
]

SEPARATOR = "__"
MAX_NAME_CHARS = 64
MAX_DESCRIPTION_CHARS = 1024
MAX_SCHEMA_BYTES = 64 * 1024
_TOOL_NAME = re.compile(r"[A-Za-z0-9_-]{1,64}")


def offered_name(server: str, tool: str) -> str:
    """The name the model calls ``tool`` of ``server`` by."""
    return f"{server}{SEPARATOR}{tool}"


def server_of(name: str) -> str | None:
    """The server part of an offered name, or None when ``name`` is not of that shape."""
    server, separator, tool = name.partition(SEPARATOR)
    return server if separator and server and tool else None


def name_problem(server: str, tool: str) -> str | None:
    """Why ``tool`` of ``server`` cannot be offered, or None when it can."""
    if not _TOOL_NAME.fullmatch(tool):
        return "its name is not 1-64 letters, digits, '_' or '-'"
    if len(offered_name(server, tool)) > MAX_NAME_CHARS:
        return f"{offered_name(server, tool)!r} is longer than {MAX_NAME_CHARS} characters"
    return None


def schema_problem(schema: Mapping[str, Any]) -> str | None:
    """Why an input schema cannot be offered (not an object schema, or over ``MAX_SCHEMA_BYTES``), or None."""
    if schema.get("type") != "object":
        return 'its input schema is not {"type": "object", ...}'
    size = len(dump_json(schema))
    if size > MAX_SCHEMA_BYTES:
        return f"its input schema is {size} bytes, over {MAX_SCHEMA_BYTES}"
    return None


def clean_description(text: str | None) -> str:
    """``text`` without control or invisible format characters (newlines and tabs kept), cut to size."""
    kept = "".join(
        char for char in text or "" if char in "\n\t" or unicodedata.category(char) not in ("Cc", "Cf", "Co", "Cs")
    )
    if len(kept) > MAX_DESCRIPTION_CHARS:
        kept = kept[: MAX_DESCRIPTION_CHARS - 1] + "…"
    return kept.strip()


def _matches(tool: str, globs: Sequence[str]) -> bool:
    return any(fnmatch.fnmatchcase(tool, glob) for glob in globs)


def selected(tool: str, choice: AgentMCPConfig) -> bool:
    """Whether an agent with ``choice`` gets ``tool`` (the server's own name): included and not excluded."""
    included = choice.include is None or _matches(tool, choice.include)
    return included and not _matches(tool, choice.exclude)


def wants_approval(tool: str, choice: AgentMCPConfig) -> bool:
    """Whether a call to ``tool`` waits for a human under ``choice``."""
    return _matches(tool, choice.requires_approval)

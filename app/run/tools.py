"""Server tools: Python functions chatgate runs for the model.

An operator names a function by import path (``package.module:function``), found beside the config
file or installed. Its JSON Schema comes from
the function's type hints (or is given explicitly), its docstring is the default description, and every
call validates the model's arguments first. Sync functions run in a worker thread so they never block
the event loop; every call has a timeout; any exception becomes an error result the model sees instead
of a crashed run. Code named in the config is trusted operator code.

A timed-out sync function cannot be interrupted: its thread runs to completion in the background and its
result is discarded.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
from abc import abstractmethod
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol, get_type_hints

import anyio.to_thread
from pydantic import BaseModel, ConfigDict, ValidationError, create_model
from pydantic_core import PydanticSerializationError

from chatgate.config import AgentConfig
from chatgate.errors import ChatgateError
from chatgate.run_input import ToolDefinition
from chatgate.strict_json import dump_json, utf8_safe

__all__ = ["LiveTools", "ServerTool", "Tool", "ToolOutcome", "ToolSource", "ToolsUnavailable"]

logger = logging.getLogger("chatgate.tools")


@dataclass(frozen=True, slots=True)
class ToolOutcome:
    """What a tool call produced: text for the model, whether it is an error, and the data it returned.

    ``value`` is the function's result when it returned data rather than text (None otherwise), so a
    client can be given the object itself. ``images`` go to the model beside the text.
    """

    content: str
    is_error: bool = False
    value: Any = None
    images: tuple[tuple[str, str], ...] = ()
    """``(media type, base64 data)`` of each image the model is to see (an MCP tool's image blocks)."""


_FUNCTION_TOOL: Mapping[str, str] = {"gen_ai.tool.type": "function"}


class Tool(Protocol):
    """A tool chatgate runs for the model, whatever its kind (a Python function, an MCP server's tool).

    The runner offers ``definition``, pauses for a human when ``requires_approval``, and awaits
    ``call`` with the model's arguments as JSON text; a call never raises, failures are error outcomes.
    """

    @property
    def name(self) -> str:
        """The name the model calls it by."""
        ...

    @property
    def requires_approval(self) -> bool:
        """Whether a call waits for a human's approval."""
        ...

    @property
    def definition(self) -> ToolDefinition:
        """How the tool is offered to the model."""
        ...

    @property
    def trace_attributes(self) -> Mapping[str, str]:
        """What its ``execute_tool`` span says of its kind (``gen_ai.tool.type``, an MCP tool's server)."""
        ...

    async def call(self, arguments_json: str) -> ToolOutcome:
        """Run the tool with the model's arguments."""
        ...


class ToolsUnavailable(ChatgateError):
    """Tools an agent must offer cannot be had now: the run ends with ``code`` before any model call.

    ``public_message`` is safe for the client; which source failed, and why, is logged where it is raised.
    """

    def __init__(self, public_message: str, code: str) -> None:
        super().__init__(public_message)
        self.public_message = public_message
        self.code = code


class LiveTools(Mapping[str, Tool]):
    """An agent's tools whose sources come and go (MCP servers): a run awaits ``ready`` before offering them."""

    @abstractmethod
    async def ready(self) -> None:
        """Return once the tools the agent must offer are listed; raise ``ToolsUnavailable`` if they cannot be."""


class ToolSource(Protocol):
    """Where tools of other kinds come from (the app's MCP servers, app/mcp/), so ``run`` never imports them."""

    def agent_tools(self, name: str, agent: AgentConfig, server_tools: Mapping[str, Tool]) -> Mapping[str, Tool]:
        """The agent's tools: ``server_tools`` plus those of its other sources."""
        ...


def _arguments_model(name: str, function: Callable[..., Any]) -> type[BaseModel]:
    hints = get_type_hints(function)
    fields: dict[str, Any] = {}
    for parameter in inspect.signature(function).parameters.values():
        if parameter.kind in (parameter.VAR_POSITIONAL, parameter.VAR_KEYWORD):
            continue
        annotation = hints.get(parameter.name, Any)
        default = ... if parameter.default is parameter.empty else parameter.default
        fields[parameter.name] = (annotation, default)
    return create_model(f"{name}_arguments", __config__=ConfigDict(extra="forbid"), **fields)


def _without_titles(schema: Any) -> Any:
    """Drop pydantic's generated ``title`` strings: noise for a model (a property named title stays)."""
    if isinstance(schema, dict):
        return {
            key: _without_titles(value)
            for key, value in schema.items()
            if not (key == "title" and isinstance(value, str))
        }
    if isinstance(schema, list):
        return [_without_titles(item) for item in schema]
    return schema


@dataclass(frozen=True, slots=True)
class ServerTool:
    """A function chatgate runs when the model calls ``name``."""

    name: str
    description: str
    parameters: Mapping[str, Any]
    function: Callable[..., Any]
    arguments: type[BaseModel]
    timeout: float = 30.0
    requires_approval: bool = False

    @classmethod
    def from_function(
        cls,
        name: str,
        function: Callable[..., Any],
        *,
        description: str | None = None,
        parameters: Mapping[str, Any] | None = None,
        timeout: float = 30.0,
        requires_approval: bool = False,
    ) -> ServerTool:
        """Build a tool whose schema comes from ``function``'s type hints unless ``parameters`` is given."""
        arguments = _arguments_model(name, function)
        schema = dict(parameters) if parameters is not None else _without_titles(arguments.model_json_schema())
        return cls(
            name=name,
            description=description if description is not None else inspect.getdoc(function) or "",
            parameters=schema,
            function=function,
            arguments=arguments,
            timeout=timeout,
            requires_approval=requires_approval,
        )

    @property
    def definition(self) -> ToolDefinition:
        """How the tool is offered to the model."""
        return ToolDefinition(self.name, self.description, self.parameters)

    @property
    def trace_attributes(self) -> Mapping[str, str]:
        """A Python function chatgate runs: ``gen_ai.tool.type`` ``function``."""
        return _FUNCTION_TOOL

    async def call(self, arguments_json: str) -> ToolOutcome:
        """Validate the model's arguments and run the function; failures come back as error outcomes."""
        try:
            arguments = self.arguments.model_validate_json(arguments_json or "{}")
        except ValidationError as exc:
            problems = "; ".join(
                f"{'.'.join(map(str, e['loc'])) or 'arguments'}: {e['msg']}" for e in exc.errors(include_url=False)
            )
            return ToolOutcome(f"Invalid arguments for {self.name}: {problems}", is_error=True)
        kwargs = {field: getattr(arguments, field) for field in type(arguments).model_fields}
        try:
            async with asyncio.timeout(self.timeout):
                if inspect.iscoroutinefunction(self.function):
                    result = await self.function(**kwargs)
                else:
                    result = await anyio.to_thread.run_sync(lambda: self.function(**kwargs), abandon_on_cancel=True)
        except TimeoutError:
            logger.warning("tool %r timed out after %ss", self.name, self.timeout)
            return ToolOutcome(f"{self.name} timed out after {self.timeout:g} seconds", is_error=True)
        except Exception as exc:
            logger.warning("tool %r raised %s: %s", self.name, type(exc).__name__, exc)
            return ToolOutcome(utf8_safe(f"{self.name} failed: {type(exc).__name__}: {exc}"), is_error=True)
        # A lone surrogate (text read with surrogateescape) is escaped here, once: UTF-8 cannot carry it
        # to the model, the client, the store or a span.
        if isinstance(result, str):
            return ToolOutcome(utf8_safe(result))
        try:
            result = utf8_safe(result)
            return ToolOutcome(dump_json(result).decode(), value=result)
        except (PydanticSerializationError, RecursionError) as exc:
            logger.warning("tool %r returned a value that is not JSON: %s", self.name, exc)
            return ToolOutcome(f"{self.name} returned a value that cannot be sent as JSON", is_error=True)

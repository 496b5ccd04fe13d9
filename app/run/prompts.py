"""System-message templates, rendered fresh for every request.

A template holds ``{{NAME}}`` placeholders. Each variable's value comes from one source: plain text,
files (concatenated), a Python file (its ``SYSTEM_MESSAGE_VALUE`` or ``get_value()``), or inline Python
(a single expression is the value; a block sets ``VALUE``, empty if it does not). A variable may carry a
``condition`` (when falsey the value is ``""`` and its source is never read or run) and its own
``runtime_code``.

The template's ``runtime_code`` runs once per request; its exported (non-underscore) globals form the
namespace every code, inline code and condition sees, on top of ``CONFIG`` (the agent's config),
``AGENT``, ``THREAD_ID`` and ``NOW`` (the request's UTC time). A variable's own ``runtime_code`` runs
after it and extends the namespace for that variable only.

Request-scoped values replace configured ones for one render: from server-side code (the ``values``
argument, or a ``SYSTEM_MESSAGE_VARIABLES`` dict exported by runtime code) and, only for variables marked
``client_overridable``, from the client. Substitution is one pass, so a value is always literal text: a
``{{OTHER}}`` inside a value stays as written, and client text is never run.

Every template has a version (docs/prompts.md): ``hash``, the first 12 hex digits of a SHA-256 over the
template and its variables' static definitions (text, inline code, file and code names: not what files
or code produce at render time), worked out once when the template is built; ``version`` is the
operator's ``label`` when set, else the hash.

Code in the config is trusted operator input. Rendering runs in a worker thread with a timeout, and any
failure raises ``PromptRenderError`` naming the variable.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from types import CodeType
from typing import Any

import anyio
import anyio.to_thread

from chatgate.config import PLACEHOLDER
from chatgate.errors import ChatgateError

__all__ = [
    "CodeSource",
    "PromptFacts",
    "PromptRenderError",
    "PromptTemplate",
    "RequestFacts",
    "Variable",
]


class PromptRenderError(ChatgateError):
    """Rendering failed; ``variable`` names where (None for the template's own runtime code)."""

    def __init__(self, variable: str | None, detail: str) -> None:
        self.variable = variable
        where = f"variable {variable!r}" if variable else "runtime_code"
        super().__init__(f"system prompt {where}: {detail}")


@dataclass(frozen=True, slots=True)
class PromptFacts:
    """Which prompt a run answered under: its ``version`` and ``hash``, and the agent's ``variant`` (None: none)."""

    version: str | None = None
    hash: str | None = None
    variant: str | None = None


@dataclass(frozen=True, slots=True)
class CodeSource:
    """Python to run: a file (``path``) or inline text (``inline``)."""

    path: Path | None = None
    inline: str | None = None


@dataclass(frozen=True, slots=True)
class Variable:
    """One ``{{NAME}}``: exactly one of ``text``, ``files``, ``code`` or ``inline_code`` gives its value."""

    name: str
    text: str | None = None
    files: tuple[Path, ...] = ()
    code: Path | None = None
    inline_code: str | None = None
    condition: CodeSource | None = None
    runtime_code: CodeSource | None = None
    client_overridable: bool = False


@dataclass(frozen=True, slots=True)
class RequestFacts:
    """What a template may know about the request it renders for."""

    agent: str
    thread_id: str = ""
    now: datetime = field(default_factory=lambda: datetime.now(UTC))
    config: Mapping[str, Any] = field(default_factory=dict)


class _Sources:
    """Files and compiled code, re-read only when a file changes on disk."""

    def __init__(self) -> None:
        self._text: dict[Path, tuple[int, str]] = {}
        self._code: dict[Path | str, tuple[int, CodeType]] = {}

    def read(self, path: Path) -> str:
        stamp = path.stat().st_mtime_ns
        cached = self._text.get(path)
        if cached is None or cached[0] != stamp:
            cached = (stamp, path.read_text(encoding="utf-8"))
            self._text[path] = cached
        return cached[1]

    def compiled(self, source: Path | str, mode: str = "exec") -> CodeType:
        if isinstance(source, Path):
            stamp = source.stat().st_mtime_ns
            key: Path | str = source
            text = None
        else:
            stamp, key, text = 0, f"{mode}:{source}", source
        cached = self._code.get(key)
        if cached is None or cached[0] != stamp:
            body = text if text is not None else self.read(source)  # type: ignore[arg-type]
            cached = (stamp, compile(body, str(source) if isinstance(source, Path) else "<inline_code>", mode))
            self._code[key] = cached
        return cached[1]


class PromptTemplate:
    """A template and its variables; ``render`` produces one request's system prompt."""

    def __init__(
        self,
        template: str,
        variables: Mapping[str, Variable] | None = None,
        runtime_code: CodeSource | None = None,
        *,
        timeout: float = 10.0,
        label: str | None = None,
    ) -> None:
        self.template = template
        self.variables = dict(variables or {})
        self.runtime_code = runtime_code
        self.timeout = timeout
        self.label = label
        self.hash = _content_hash(template, self.variables, runtime_code)
        self._sources = _Sources()

    @property
    def version(self) -> str:
        """The operator's label when configured, else the content hash."""
        return self.label or self.hash

    @property
    def is_static(self) -> bool:
        """True when the template renders to itself (no variables, no runtime code)."""
        return not self.variables and self.runtime_code is None

    @property
    def placeholders(self) -> list[str]:
        """The placeholder names in the template, in order of first use."""
        return list(dict.fromkeys(PLACEHOLDER.findall(self.template)))

    def missing_variables(self) -> list[str]:
        """Placeholders with no variable: a config error."""
        return [name for name in self.placeholders if name not in self.variables]

    async def render(
        self,
        facts: RequestFacts,
        *,
        values: Mapping[str, Any] | None = None,
        client_values: Mapping[str, Any] | None = None,
    ) -> str:
        """Render the system prompt for one request, off the event loop; raises ``PromptRenderError``."""
        if self.is_static:
            return self.template
        overrides = dict(values or {})
        for name, value in (client_values or {}).items():
            variable = self.variables.get(name)
            if variable is not None and variable.client_overridable:
                overrides[name] = value
        try:
            with anyio.fail_after(self.timeout):
                return await anyio.to_thread.run_sync(self._render, facts, overrides, abandon_on_cancel=True)
        except TimeoutError:
            raise PromptRenderError(None, f"rendering took longer than {self.timeout:g} seconds") from None

    def _render(self, facts: RequestFacts, overrides: dict[str, Any]) -> str:
        namespace: dict[str, Any] = {
            "CONFIG": facts.config,
            "AGENT": facts.agent,
            "THREAD_ID": facts.thread_id,
            "NOW": facts.now,
        }
        if self.runtime_code is not None:
            namespace.update(self._exports(self.runtime_code, namespace, None))
            server_values = namespace.pop("SYSTEM_MESSAGE_VARIABLES", None) or {}
            overrides = {**server_values, **overrides}
        values = {}
        for name in self.placeholders:
            if name in overrides:
                values[name] = _as_text(overrides[name])
            else:
                values[name] = self._value(self.variables[name], namespace)
        return PLACEHOLDER.sub(lambda match: values[match.group(1)], self.template)

    def _value(self, variable: Variable, namespace: dict[str, Any]) -> str:
        name = variable.name
        try:
            scope = dict(namespace)
            if variable.runtime_code is not None:
                scope.update(self._exports(variable.runtime_code, scope, name))
            if variable.condition is not None and not self._evaluate(variable.condition, scope):
                return ""
            if variable.text is not None:
                return variable.text
            if variable.files:
                return "".join(self._sources.read(path) for path in variable.files)
            if variable.code is not None:
                return self._code_file_value(variable.code, scope)
            if variable.inline_code is not None:
                return _as_text(self._evaluate(CodeSource(inline=variable.inline_code), scope))
            return ""
        except PromptRenderError:
            raise
        except Exception as exc:
            raise PromptRenderError(name, f"{type(exc).__name__}: {exc}") from exc

    def _exports(self, source: CodeSource, namespace: dict[str, Any], variable: str | None) -> dict[str, Any]:
        scope = dict(namespace)
        try:
            exec(self._code_of(source), scope)  # trusted operator code, see the module docstring
        except Exception as exc:
            raise PromptRenderError(variable, f"runtime_code failed: {type(exc).__name__}: {exc}") from exc
        return {key: value for key, value in scope.items() if not key.startswith("_")}

    def _evaluate(self, source: CodeSource, scope: dict[str, Any]) -> Any:
        """A single expression's value, or the ``VALUE`` a block or a file sets (None if it sets none)."""
        if source.inline is not None:
            try:
                expression = self._sources.compiled(source.inline, "eval")
            except SyntaxError:
                pass
            else:
                return eval(expression, dict(scope))
        local = dict(scope)
        exec(self._code_of(source), local)
        if source.path is not None and "VALUE" not in local:
            return self._code_file_result(local)
        return local.get("VALUE")

    def _code_file_value(self, path: Path, scope: dict[str, Any]) -> str:
        local = dict(scope)
        exec(self._sources.compiled(path), local)
        return _as_text(self._code_file_result(local))

    @staticmethod
    def _code_file_result(local: dict[str, Any]) -> Any:
        if "SYSTEM_MESSAGE_VALUE" in local:
            return local["SYSTEM_MESSAGE_VALUE"]
        get_value = local.get("get_value")
        return get_value() if callable(get_value) else None

    def _code_of(self, source: CodeSource) -> CodeType:
        if source.path is not None:
            return self._sources.compiled(source.path)
        return self._sources.compiled(source.inline or "")


def _content_hash(template: str, variables: Mapping[str, Variable], runtime_code: CodeSource | None) -> str:
    """12 hex digits of SHA-256 over the template and its variables' static definitions (file names, not contents)."""

    def code(source: CodeSource | None) -> list[str | None] | None:
        return None if source is None else [source.path.name if source.path else None, source.inline]

    if not variables and runtime_code is None:  # a plain prompt: the hash of its text alone
        return hashlib.sha256(template.encode()).hexdigest()[:12]
    parts: list[Any] = [template, code(runtime_code)]
    for name in sorted(variables):
        v = variables[name]
        files = [path.name for path in v.files]
        static = [v.text, files, v.code.name if v.code else None, v.inline_code, code(v.condition)]
        parts.append([name, *static, code(v.runtime_code), v.client_overridable])
    return hashlib.sha256(json.dumps(parts).encode()).hexdigest()[:12]


def _as_text(value: Any) -> str:
    return "" if value is None else str(value)

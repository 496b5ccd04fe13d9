"""Reading a config file, and errors that name each problem by its key path.

TOML, or JSON for a file ending in ``.json``; ``${env:...}`` and ``${file:...}`` references resolved
before validation. Types are strict, as pydantic's strict mode over JSON has them: a string is never
turned into a number or a boolean (``default = "yes"`` is an error); an integer is accepted where a
number of seconds is expected. The files read are recorded on the config (``Config.files_read``) so a
reload can watch them all.
"""

from __future__ import annotations

import json
import os
import re
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from chatgate.config.checks import cross_checks
from chatgate.config.schema import Config
from chatgate.errors import ConfigError

__all__ = ["load_config", "parse_config"]

_REFERENCE = re.compile(r"\$\$\{|\$\{(env|file):([^}]*)\}")


def load_config(path: str | os.PathLike[str]) -> Config:
    """Read, interpolate and validate the config file at ``path``."""
    file = Path(path)
    try:
        text = file.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError([f"{file}: cannot read: {exc.strerror or exc}"]) from exc
    try:
        data: Any = json.loads(text) if file.suffix == ".json" else tomllib.loads(text)
    except (tomllib.TOMLDecodeError, json.JSONDecodeError) as exc:
        raise ConfigError([f"{file}: not valid {'JSON' if file.suffix == '.json' else 'TOML'}: {exc}"]) from exc
    if not isinstance(data, dict):
        raise ConfigError([f"{file}: the top level must be a table"])
    return parse_config(data, base_dir=file.parent, source=file)


def parse_config(
    data: Mapping[str, Any],
    *,
    base_dir: Path,
    environ: Mapping[str, str] | None = None,
    source: Path | None = None,
) -> Config:
    """Interpolate ``${env:...}``/``${file:...}`` references in ``data`` and validate it strictly.

    ``source`` is the file ``data`` came from, if any: it heads ``Config.files_read``.
    """
    problems: list[str] = []
    files_read: list[Path] = [source] if source is not None else []
    resolved = _interpolate(
        data, (), _Context(base_dir, os.environ if environ is None else environ, files_read), problems
    )
    try:
        # Validating the JSON form in strict mode takes exactly what a config file can say: arrays
        # for lists and tuples, integers for floats, and no strings standing in for numbers or booleans.
        config = Config.model_validate_json(json.dumps(resolved, default=str), strict=True)
    except ValidationError as exc:
        raise ConfigError(problems + _describe_all(exc.errors(), resolved)) from None
    config._base_dir = base_dir
    config._files_read = tuple(dict.fromkeys(files_read))
    problems += cross_checks(config, os.environ if environ is None else environ)
    if problems:
        raise ConfigError(problems)
    return config


@dataclass(frozen=True, slots=True)
class _Context:
    base_dir: Path
    environ: Mapping[str, str]
    files_read: list[Path]


def _interpolate(value: Any, path: tuple[str | int, ...], context: _Context, problems: list[str]) -> Any:
    if isinstance(value, str):
        return _interpolate_string(value, path, context, problems)
    if isinstance(value, dict):
        return {key: _interpolate(item, (*path, key), context, problems) for key, item in value.items()}
    if isinstance(value, list):
        return [_interpolate(item, (*path, index), context, problems) for index, item in enumerate(value)]
    return value


def _interpolate_string(text: str, path: tuple[str | int, ...], context: _Context, problems: list[str]) -> str:
    def replace(match: re.Match[str]) -> str:
        kind, name = match.group(1), match.group(2)
        if kind is None:
            return "${"
        if kind == "env":
            if name not in context.environ:
                problems.append(f"{_dotted(path)}: environment variable {name} is not set")
                return ""
            return context.environ[name]
        file = context.base_dir / name
        context.files_read.append(file)  # watched even when unreadable: creating it should reload
        try:
            return file.read_text(encoding="utf-8")
        except OSError as exc:
            problems.append(f"{_dotted(path)}: cannot read file {name!r}: {exc.strerror or exc}")
            return ""

    return _REFERENCE.sub(replace, text)


def _dotted(path: tuple[str | int, ...]) -> str:
    return ".".join(str(part) for part in path) or "(top level)"


def _describe_all(errors: list[Any], data: Any) -> list[str]:
    """One line per problem, with union branch names removed from the key path.

    A value that may be a string or a table fails both ways; the string branch's "should be a valid
    string" is dropped whenever the same key (or a key inside it) has a more specific complaint.
    """
    located = [(_input_path(error["loc"], data), error) for error in errors]
    specific = [path for path, error in located if error["type"] != "string_type"]
    strings = {path for path, error in located if error["type"] == "string_type"}
    lines = []
    for path, error in located:
        if error["type"] == "string_type" and any(other[: len(path)] == path for other in specific):
            continue
        if error["type"] in ("model_type", "dict_type") and path in strings:
            line = f"{_dotted(path)}: must be a string or a table"
        else:
            line = _describe(path, error)
        if line not in lines:
            lines.append(line)
    return lines


def _input_path(loc: tuple[str | int, ...], data: Any) -> tuple[str | int, ...]:
    """The parts of a pydantic error location that are real keys or indexes of the input."""
    path: list[str | int] = []
    node = data
    for part in loc:
        if isinstance(node, dict) and part in node:
            node = node[part]
        elif isinstance(node, list) and isinstance(part, int) and part < len(node):
            node = node[part]
        elif not (isinstance(node, dict) and isinstance(part, str) and not _looks_like_union_tag(part)):
            continue
        path.append(part)
    return tuple(path)


def _looks_like_union_tag(part: str) -> bool:
    return part in {"str", "int", "float", "bool"} or part[:1].isupper() or "[" in part


def _describe(path: tuple[str | int, ...], error: Mapping[str, Any]) -> str:
    location = _dotted(path)
    if error["type"] == "extra_forbidden":
        return f"{location}: unknown key"
    if error["type"] == "missing":
        return f"{location}: required key is missing"
    message = str(error["msg"]).removeprefix("Value error, ")
    return f"{location}: {message}"

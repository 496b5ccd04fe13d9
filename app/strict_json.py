"""JSON as the standard defines it, on the way in and on the way out.

In: what a client sends is parsed by ``client_json`` and checked by ``check_client_value``: nesting
deeper than ``MAX_DEPTH`` levels and non-finite numbers (``NaN``, ``Infinity``, ``-Infinity``, and
numbers too large for a double such as ``1e400``, which parse as infinity) are refused with a 422
naming the field. The walk is iterative, so no client value can exhaust Python's recursion limit.

Out: ``dump_json`` is how chatgate writes JSON it did not build byte by byte (SSE frames, upstream
request bodies, tool arguments and results). A non-finite float that still reaches it (from a server
tool, or an upstream's own JSON) is written as ``null``, as a browser's ``JSON.stringify`` does, so
no frame or body ever holds a bare ``NaN``. A lone surrogate, which UTF-8 cannot encode (a server
tool's text read with ``surrogateescape``), is written as the six characters ``\\udcff`` by
``utf8_safe``: server tool results are cleaned with it where they are made, and ``dump_json`` falls
back to it, so no frame fails to encode.
"""

from __future__ import annotations

import math
from typing import Any

from pydantic_core import PydanticSerializationError, from_json, to_json

from chatgate.errors import RequestError

__all__ = ["MAX_DEPTH", "check_client_value", "client_json", "dump_json", "utf8_safe"]

MAX_DEPTH = 64
"""How deep a client's JSON may nest (objects and arrays), counted from the value's own top."""

_NOT_FINITE = "numbers must be finite: NaN, Infinity and numbers beyond a double's range are not JSON"
_TOO_DEEP = f"the JSON nests deeper than {MAX_DEPTH} levels"


def client_json(data: bytes | str, field: str) -> Any:
    """Parse JSON a client sent and check it (see ``check_client_value``).

    Raises ``ValueError`` when ``data`` is not JSON at all (the caller decides what that means) and a
    422 ``RequestError`` naming ``field`` when it nests too deep or holds a non-finite number.
    """
    try:
        value = from_json(data)
    except ValueError as exc:
        if "recursion limit" in str(exc):  # the parser's own guard, far below Python's stack
            raise _refusal(field, _TOO_DEEP) from None
        raise
    check_client_value(value, field)
    return value


def check_client_value(value: Any, field: str) -> None:
    """Refuse (422, naming the path under ``field``) nesting past ``MAX_DEPTH`` or a non-finite number."""
    if _clean(value):
        return
    # Rare: walk again, keeping paths this time, to name the first offending field.
    stack: list[tuple[Any, tuple[str | int, ...], int]] = [(value, (), 0)]
    while stack:
        node, path, depth = stack.pop()
        if isinstance(node, float):
            if not math.isfinite(node):
                raise _refusal(_join(field, path), _NOT_FINITE)
        elif isinstance(node, dict | list):
            if depth >= MAX_DEPTH:
                raise _refusal(_join(field, path), _TOO_DEEP)
            items = node.items() if isinstance(node, dict) else enumerate(node)
            stack.extend((child, (*path, key), depth + 1) for key, child in items)


def _clean(value: Any) -> bool:
    """True when ``value`` is within the depth limit and all its numbers are finite (the fast path).

    Parsed JSON holds exactly ``dict``, ``list``, ``str``, ``int``, ``float``, ``bool`` and ``None``;
    only containers are pushed, so long strings and big histories cost one type check per value.
    """
    isfinite = math.isfinite
    if type(value) is float:
        return isfinite(value)
    stack: list[tuple[Any, int]] = [(value, 0)]
    while stack:
        node, depth = stack.pop()
        if type(node) is dict:
            children: Any = node.values()
        elif type(node) is list:
            children = node
        else:
            continue
        if depth >= MAX_DEPTH:
            return False
        for child in children:
            kind = type(child)
            if kind is dict or kind is list:
                stack.append((child, depth + 1))
            elif kind is float and not isfinite(child):
                return False
    return True


def dump_json(value: Any) -> bytes:
    """``value`` as JSON bytes; a non-finite float becomes ``null``, a lone surrogate ``\\udcff`` (see above)."""
    try:
        return to_json(value, inf_nan_mode="null")
    except PydanticSerializationError:
        try:
            cleaned = utf8_safe(value)
        except RecursionError:  # deeper than to_json goes anyway: its own error stands
            cleaned = value
        if cleaned is value:
            raise
        return to_json(cleaned, inf_nan_mode="null")


def utf8_safe(value: Any) -> Any:
    """``value`` with every lone surrogate in its strings (keys too) written as a ``\\udcff`` escape.

    Walks dicts, lists and tuples (a changed tuple comes back a list, a JSON array all the same);
    anything else is returned as it is, and so is ``value`` itself when nothing needed escaping.
    """
    if isinstance(value, str):
        if value.isascii():
            return value
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            return value.encode("utf-8", "backslashreplace").decode("utf-8")
        return value
    if isinstance(value, dict):
        items = [(utf8_safe(key), utf8_safe(item)) for key, item in value.items()]
        pairs = zip(items, value.items(), strict=True)
        changed = any(new_key is not key or new is not item for (new_key, new), (key, item) in pairs)
        return dict(items) if changed else value
    if isinstance(value, list | tuple):
        cleaned = [utf8_safe(item) for item in value]
        return cleaned if any(new is not old for new, old in zip(cleaned, value, strict=True)) else value
    return value


def _join(field: str, path: tuple[str | int, ...]) -> str:
    parts = [str(part) for part in path]
    if field and field != "(body)":
        parts.insert(0, field)
    return ".".join(parts) or "(body)"


def _refusal(field: str, problem: str) -> RequestError:
    return RequestError(
        422, "invalid_request", f"the request is invalid: {field}: {problem}", [{"field": field, "problem": problem}]
    )

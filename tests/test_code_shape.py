"""Functions stay short and shallow: no function over 120 lines, no nesting deeper than 7 (read with ast).

Nesting counts the compound statements a line sits in inside its function (``if``/``for``/``while``/
``with``/``try``/``match`` and nested definitions; an ``elif`` is as deep as its ``if``). The listed
functions are the known exceptions, to be split; nothing else may join them (none is left).
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).parent.parent
MAX_LINES = 120
MAX_NESTING = 7

LONG: set[str] = set()
DEEP: set[str] = set()

_BLOCKS = (
    ast.If,
    ast.For,
    ast.AsyncFor,
    ast.While,
    ast.With,
    ast.AsyncWith,
    ast.Try,
    ast.TryStar,
    ast.Match,
    ast.FunctionDef,
    ast.AsyncFunctionDef,
    ast.ClassDef,
)


def _nesting(statements: list[ast.stmt], depth: int = 0) -> int:
    deepest = depth
    for statement in statements:
        if not isinstance(statement, _BLOCKS):
            continue
        deepest = max(deepest, depth + 1)
        bodies = [getattr(statement, "body", []), getattr(statement, "finalbody", [])]
        bodies += [handler.body for handler in getattr(statement, "handlers", [])]
        bodies += [case.body for case in getattr(statement, "cases", [])]
        orelse = getattr(statement, "orelse", [])
        if isinstance(statement, ast.If) and len(orelse) == 1 and isinstance(orelse[0], ast.If):
            deepest = max(deepest, _nesting(orelse, depth))  # elif
        else:
            bodies.append(orelse)
        deepest = max([deepest, *(_nesting(body, depth + 1) for body in bodies)])
    return deepest


def _functions() -> list[tuple[str, int, int]]:
    found = []
    for top in ("app", "adapters"):
        for path in sorted((ROOT / top).rglob("*.py")):
            for node in ast.walk(ast.parse(path.read_text())):
                if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    lines = (node.end_lineno or node.lineno) - node.lineno + 1
                    name = f"{path.relative_to(ROOT)}:{node.name}"
                    found.append((name, lines, _nesting(node.body)))
    return found


def test_no_function_is_longer_than_120_lines() -> None:
    assert [(name, lines) for name, lines, _ in _functions() if lines > MAX_LINES and name not in LONG] == []


def test_no_function_nests_deeper_than_7() -> None:
    assert [(name, depth) for name, _, depth in _functions() if depth > MAX_NESTING and name not in DEEP] == []


def test_the_nesting_measure_counts_blocks_not_elifs() -> None:
    code = "def f(x):\n    if x:\n        for y in x:\n            pass\n    elif x is None:\n        pass\n"
    (function,) = ast.parse(code).body
    assert isinstance(function, ast.FunctionDef)
    assert _nesting(function.body) == 2

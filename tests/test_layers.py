"""The import graph of app/ and adapters/, read with ast: layered, acyclic, and packages keep their modules private.

Units are the top-level modules of ``chatgate`` and its subpackages (each adapter package is one unit).
A unit imports only units on lower layers; inside a subpackage modules import each other freely, but
from outside a subpackage only its ``__init__`` (its ``__all__``) is imported. The layers are drawn in
docs/architecture.md.
"""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).parent.parent

LAYERS: list[set[str]] = [
    {"errors", "data_urls", "history", "events", "caller", "version", "media_types", "adapters", "background"},
    {"ids", "config", "run_input", "strict_json", "telemetry", "drain"},
    {"store", "protocol", "runlog", "providers", "token_estimates", "identity", "adapters.base"},
    {"approvals", "usage", "files", "context", "leak_guard", "tracing"},
    {"run", "adapters.ag_ui", "adapters.vercel_ai"},
    {"access", "threads", "scripting", "mcp"},
    {"web"},
    {"serve", ""},  # "" is the package itself: chatgate/__init__.py, the public API
]
"""Bottom to top. Foundations (with data: URLs and the installed version); ids, config, meters and
logs, the drain; the store, the protocol interface, run logs, upstreams, token estimates and sign-in
tokens; approvals, usage, user files, the context budget (with its summaries), the leak guard and
tracing; one run, and the adapters; access, stored threads, the Python API and MCP tools; the HTTP
edge; the command and the public API."""


def _modules() -> dict[str, Path]:
    found = {}
    for top, name in (("app", "chatgate"), ("adapters", "chatgate.adapters")):
        for path in (ROOT / top).rglob("*.py"):
            parts = list(path.relative_to(ROOT / top).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            found[".".join([name, *parts])] = path
    return found


MODULES = _modules()


def _is_package(module: str) -> bool:
    return MODULES[module].name == "__init__.py"


def _owner(name: str) -> str | None:
    while name and name not in MODULES:
        name = name.rpartition(".")[0]
    return name or None


def _imports() -> dict[str, set[str]]:
    """Each module's chatgate imports (at any depth: in functions and under TYPE_CHECKING too)."""
    graph: dict[str, set[str]] = defaultdict(set)
    for module, path in MODULES.items():
        for node in ast.walk(ast.parse(path.read_text())):
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                submodules = [f"{node.module}.{alias.name}" for alias in node.names]
                submodules = [name for name in submodules if name in MODULES]
                targets = submodules if len(submodules) == len(node.names) else [node.module, *submodules]
            for target in targets:
                owner = _owner(target) if target.startswith("chatgate") else None
                if owner is not None and owner != module:
                    graph[module].add(owner)
    return graph


GRAPH = _imports()


def _unit(module: str) -> str:
    parts = module.split(".")[1:]
    if parts[:1] == ["adapters"]:
        return ".".join(parts[:2])
    return parts[0] if parts else ""


def _layer(unit: str) -> int:
    (layer,) = [index for index, units in enumerate(LAYERS) if unit in units]
    return layer


def test_every_unit_has_one_layer() -> None:
    units = {_unit(module) for module in MODULES}
    placed = [unit for layer in LAYERS for unit in layer]
    assert sorted(placed) == sorted(set(placed))
    assert units == set(placed)


def test_imports_only_go_down_the_layers() -> None:
    upward = [
        f"{module} -> {target}"
        for module, targets in GRAPH.items()
        for target in targets
        if _unit(module) != _unit(target) and _layer(_unit(target)) >= _layer(_unit(module))
    ]
    assert upward == []


def test_the_import_graph_has_no_cycle() -> None:
    state: dict[str, int] = {}
    cycles: list[list[str]] = []

    def visit(module: str, path: list[str]) -> None:
        state[module] = 1
        for target in sorted(GRAPH[module]):
            if state.get(target) == 1:
                cycles.append([*path[path.index(target) :], target])
            elif target not in state:
                visit(target, [*path, target])
        state[module] = 2

    for module in sorted(MODULES):
        if module not in state:
            visit(module, [module])
    assert cycles == []


def test_no_module_imports_another_packages_private_modules() -> None:
    def package(module: str) -> str:
        return module if _is_package(module) else module.rpartition(".")[0]

    private = [
        f"{module} -> {target}"
        for module, targets in GRAPH.items()
        for target in targets
        if not _is_package(target)
        and package(target) not in ("chatgate", "chatgate.adapters")
        and not (module == package(target) or module.startswith(package(target) + "."))
    ]
    assert private == []


def test_the_core_never_imports_the_adapters() -> None:
    core = [module for module in MODULES if not module.startswith("chatgate.adapters")]
    assert [f"{m} -> {t}" for m in core for t in GRAPH[m] if t.startswith("chatgate.adapters")] == []


def test_the_top_of_the_package_stays_small() -> None:
    top = [path for path in (ROOT / "app").glob("*.py")]
    assert len(top) <= 15


def test_there_are_at_most_eight_floors() -> None:
    # The longest import chain, web -> threads -> run -> context -> providers -> config -> errors, set it.
    assert len(LAYERS) <= 8


def test_one_concept_is_one_room() -> None:
    # A new package is a new concept; a concept split over two rooms was folded into one (issue 39).
    packages = [path.parent for path in (ROOT / "app").glob("*/__init__.py")]
    assert len(packages) <= 19

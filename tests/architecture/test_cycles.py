"""No import cycle anywhere in `src/tether`, package `__init__`s included, counting every import
statement: at module level, inside functions (lazy) and under `TYPE_CHECKING` (ast, no import
side effects). A cycle in the types is still a cycle for a reader: neither module can be read,
tested or moved without the other.

An edge goes to the module a statement names: `import a.b` → `a.b`; `from a import n` → `a`,
and also `a.n` when that is a module (so `from tether.tui import handlers` runs the package's
`__init__`, as Python does)."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

from kit.source import parse_file

SRC = Path(__file__).resolve().parents[2] / "src"
PACKAGE = SRC / "tether"


def module_name(path: Path) -> str:
    """`src/tether/a/b.py` → `tether.a.b`; `src/tether/a/__init__.py` → `tether.a`."""
    parts = list(path.relative_to(SRC).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def modules() -> dict[str, Path]:
    """Every module of the package, by dotted name."""
    return {module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def _known(name: str, known: dict[str, Path]) -> str | None:
    """`name` itself or its longest prefix that is one of our modules (None: not ours)."""
    while name:
        if name in known:
            return name
        name = name.rpartition(".")[0]
    return None


def _targets(node: ast.AST, here: str, is_package: bool, known: dict[str, Path]) -> Iterator[str]:
    if isinstance(node, ast.Import):
        for alias in node.names:
            if (m := _known(alias.name, known)) is not None:
                yield m
        return
    if not isinstance(node, ast.ImportFrom):
        return
    base = node.module or ""
    if node.level:  # relative: from the module's package, `level - 1` packages up
        package = here.split(".") if is_package else here.split(".")[:-1]
        anchor = package[: len(package) - (node.level - 1)]
        base = ".".join([*anchor, *([base] if base else [])])
    if (m := _known(base, known)) is not None:
        yield m
    for alias in node.names:
        if f"{base}.{alias.name}" in known:
            yield f"{base}.{alias.name}"


def import_graph() -> dict[str, set[str]]:
    """Module → the modules of ours it imports (every statement, any nesting)."""
    known = modules()
    graph: dict[str, set[str]] = {}
    for name, path in known.items():
        tree = parse_file(path)
        is_package = path.name == "__init__.py"
        graph[name] = {
            t
            for node in ast.walk(tree)
            for t in _targets(node, name, is_package, known)
            if t != name
        }
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component: list[str] = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                out.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return sorted(out)


def test_the_walker_sees_every_kind_of_import() -> None:
    graph = import_graph()
    assert "tether.messages" in graph["tether.wire.view"]  # top level
    assert "tether.tracing.otel" in graph["tether.tracing"]  # inside a function
    assert "tether.tools.base" in graph["tether.tracing.base"]  # under TYPE_CHECKING


def test_the_cycle_finder_names_each_component() -> None:
    graph: dict[str, set[str]] = {"a": {"b"}, "b": {"a", "c"}, "c": set(), "d": {"e"}, "e": {"f"}, "f": {"d"}}
    assert cycles(graph) == [["a", "b"], ["d", "e", "f"]]


def test_no_import_cycle_in_the_package() -> None:
    found = cycles(import_graph())
    report = "\n".join(f"  {len(c)} modules: {', '.join(c)}" for c in found)
    assert not found, f"{len(found)} import cycles (strongly connected components):\n{report}"

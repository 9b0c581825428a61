"""No dead names: every name a module of `src/tether` defines at its top level (a function, a
class, a constant; decorated ones are registered, so used) is named again somewhere in `src`,
`tests` or `bench`. The review of 2026-12-07 found eleven that were not (§3.6)."""

from __future__ import annotations

import ast
import re
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
KEPT = {
    "READ_DIR": "the Landlock ABI's access flags are listed whole (`sandbox/landlock.py`)",
}
"""Names defined for completeness, each with the reason."""


def top_level_names(tree: ast.Module) -> list[tuple[int, str]]:
    out: list[tuple[int, str]] = []
    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            if not node.decorator_list:
                out.append((node.lineno, node.name))
        elif isinstance(node, ast.Assign):
            out += [(node.lineno, t.id) for t in node.targets if isinstance(t, ast.Name)]
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            out.append((node.lineno, node.target.id))
    return [(line, name) for line, name in out if not name.startswith("__")]


def test_every_top_level_name_is_used_somewhere() -> None:
    texts = {p: p.read_text() for d in ("src", "tests", "bench") for p in (ROOT / d).rglob("*.py")}
    words: Counter[str] = Counter()
    for text in texts.values():
        words.update(re.findall(r"[A-Za-z_]\w*", text))
    dead = [
        f"{path.relative_to(ROOT)}:{line} {name}"
        for path, text in texts.items()
        if (ROOT / "src" / "tether") in path.parents
        for line, name in top_level_names(ast.parse(text))
        if words[name] < 2 and name not in KEPT
    ]
    assert dead == []


def test_the_scan_sees_a_dead_name() -> None:
    tree = ast.parse("X = 1\n@register\ndef hook() -> None: ...\ndef f() -> None: ...\n")
    assert top_level_names(tree) == [(1, "X"), (4, "f")]

"""One meaning per name: no two modules of `src/tether` define a top-level class of the same
name, but the pairs still listed (review §3.5), each waiting for a change in its rooms.
`RunSettings` (the config's `run` section vs the parts' per-request values, now
`RequestSettings`) and `Snapshot` (compaction's, now `CompactionSnapshot`, vs a checkpoint's)
were two such pairs."""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

SRC = Path(__file__).resolve().parents[2] / "src" / "tether"
KNOWN = {"Decision", "Supervisor", "Command", "Finding", "ServerSpec", "Page"}
"""Pairs not renamed yet (permissions/compaction, sandbox/local model, skills/TUI, LSP/replay,
LSP/MCP, TUI viewer/web fetch). Remove a name once its pair is gone."""


def test_no_new_class_name_has_two_meanings() -> None:
    where: defaultdict[str, list[str]] = defaultdict(list)
    for path in sorted(SRC.rglob("*.py")):
        for node in ast.parse(path.read_text()).body:
            if isinstance(node, ast.ClassDef):
                where[node.name].append(str(path.relative_to(SRC)))
    twice = {name: paths for name, paths in where.items() if len(paths) > 1}
    assert set(twice) - KNOWN == set(), twice
    assert KNOWN - set(twice) == set(), "a pair is gone: drop it from KNOWN"

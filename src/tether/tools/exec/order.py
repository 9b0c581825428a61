"""Which calls of one reply must wait for which (pure): calls that touch the same thing run in
the order the model gave them; the rest run in parallel.

Owns: `Footprint` (what a call may read and write: a set of paths, or everything), `footprint`
(a call's, from its tool and arguments) and `waits` (for each call, the earlier calls it waits
for: those it conflicts with). Two calls conflict when one writes what the other reads or
writes. So: read-only calls run in parallel; a `read` of a path waits for an earlier `write` or
`edit` of it; `write` / `edit` of different paths run in parallel, of one path in order; a
`bash` call, and a call of any other tool that is not `safe` (MCP tools, folder tools), reads
and writes everything: it waits for every earlier call and every later call waits for it (a
reply's calls run serially unless a tool opts in: `safe` tools and `task` do). `task` runs
subagents in parallel: it waits for earlier writes, and later writes wait for it.
Does not own: running the calls (`tether.agent.turn.tool_calls`).
"""

from __future__ import annotations

import posixpath
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

EVERYTHING: None = None
"""A footprint side that covers every path."""

PATH_TOOLS = frozenset({"write", "edit"})
READ_TOOL = "read"
PARALLEL_TOOLS = frozenset({"task"})
"""Tools that are not `safe` but run in parallel with each other (they only wait for writes)."""
OWN_STATE = {"todo": "\0todo"}
"""Safe tools whose calls replace a piece of the agent's state: they run in order."""


@dataclass(frozen=True, slots=True)
class Footprint:
    """What a call may read and write: sets of normalized paths, or None for everything."""

    reads: frozenset[str] | None
    writes: frozenset[str] | None


def _norm(path: Any) -> str | None:
    if not isinstance(path, str) or not path:
        return None
    return posixpath.normpath(path.replace("\\", "/"))


def footprint(name: str, arguments: Mapping[str, Any], *, safe: bool) -> Footprint:
    """The footprint of a call of tool `name` (module docstring)."""
    if name in OWN_STATE:
        return Footprint(reads=frozenset(), writes=frozenset({OWN_STATE[name]}))
    if name == READ_TOOL:
        path = _norm(arguments.get("path"))
        return Footprint(reads=EVERYTHING if path is None else frozenset({path}), writes=frozenset())
    if safe or name in PARALLEL_TOOLS:
        return Footprint(reads=EVERYTHING, writes=frozenset())
    if name in PATH_TOOLS:
        path = _norm(arguments.get("path"))
        if path is not None:
            one = frozenset({path})
            return Footprint(reads=one, writes=one)
    return Footprint(reads=EVERYTHING, writes=EVERYTHING)


def _meets(a: frozenset[str] | None, b: frozenset[str] | None) -> bool:
    if a is None:
        return b is None or bool(b)
    if b is None:
        return bool(a)
    return not a.isdisjoint(b)


def conflict(a: Footprint, b: Footprint) -> bool:
    """Whether one call writes what the other reads or writes."""
    return _meets(a.writes, b.reads) or _meets(a.writes, b.writes) or _meets(b.writes, a.reads)


def waits(prints: Sequence[Footprint]) -> tuple[tuple[int, ...], ...]:
    """For each call (by index), the earlier calls it conflicts with, in order."""
    return tuple(
        tuple(j for j in range(i) if conflict(prints[j], prints[i])) for i in range(len(prints))
    )

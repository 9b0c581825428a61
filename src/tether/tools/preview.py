"""Edit previews: the unified diff a `write` or `edit` call would make, for an approval prompt.

Owns: `edit_diff` (reads the file through the same path guard as the tools; never writes).
Does not own: the edit itself (`tether.tools.builtin.files`), asking (`tether.agent.approval`).
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping
from typing import Any

from tether.errors import ToolError
from tether.tools.builtin.files import guard, rel
from tether.tools.context import ToolContext

MAX_PREVIEW_BYTES = 2 * 1024 * 1024
"""Files larger than this (bytes) get no preview."""


def _old_text(ctx: ToolContext, path: str) -> tuple[str, str] | None:
    real = guard(ctx, path, write=True)
    name = rel(ctx, real)
    if not real.exists():
        return name, ""
    if not real.is_file() or real.stat().st_size > MAX_PREVIEW_BYTES:
        return None
    try:
        return name, real.read_text(encoding="utf-8")
    except (UnicodeDecodeError, OSError):
        return None


def edit_diff(ctx: ToolContext, name: str, arguments: Mapping[str, Any]) -> str | None:
    """The unified diff (`--- a/path` / `+++ b/path`) that the `write` or `edit` call
    `arguments` would apply under `ctx.root`; None for another tool, invalid arguments, a path
    the guard refuses, a binary / huge / unreadable file, or an `edit` whose `old_string` does
    not match as the tool requires (the call will fail on its own and say why)."""
    path = arguments.get("path")
    if name not in ("write", "edit") or not isinstance(path, str):
        return None
    try:
        found = _old_text(ctx, path)
    except (ToolError, OSError):
        return None
    if found is None:
        return None
    shown, old = found
    if name == "write":
        new = arguments.get("content")
        if not isinstance(new, str):
            return None
    else:
        a, b = arguments.get("old_string"), arguments.get("new_string")
        every = arguments.get("replace_all") is True
        if not isinstance(a, str) or not isinstance(b, str) or not a:
            return None
        count = old.count(a)
        if count == 0 or (count > 1 and not every):
            return None
        new = old.replace(a, b)
    lines = difflib.unified_diff(
        old.splitlines(keepends=True),
        new.splitlines(keepends=True),
        fromfile=f"a/{shown}" if old or name == "edit" else "/dev/null",
        tofile=f"b/{shown}",
    )
    return "".join(line if line.endswith("\n") else line + "\n" for line in lines)

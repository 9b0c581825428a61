"""Edit previews: the unified diff a `write` or `edit` call would make, for an approval prompt,
and the change a call states by its arguments alone, for a transcript.

Owns: `edit_diff` (reads the file through the same path guard as the tools; never writes) and
`call_diff` (pure: no file is read).
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


MAX_CALL_DIFF_LINES = 400
"""Lines of a `call_diff` shown at most (a large `write`); the rest is counted."""


def call_diff(name: str, arguments: Mapping[str, Any]) -> str | None:
    """The change a `write` or `edit` call states by its arguments alone, as a unified diff:
    `edit` → `old_string` replaced by `new_string` (`--- a/path` / `+++ b/path`; hunks
    headed `@@` without line numbers, which only the file knows), `write` → the content as
    added lines (`+++ b/path`). No file is read, so the diff is the same before the call ran,
    after it, and in a session read back (the TUI's live and reloaded transcripts).

    Returns:
        The diff text (at most `MAX_CALL_DIFF_LINES` lines, then a `... N more lines` line), or
        None for another tool or arguments of the wrong shape.
    """
    path = arguments.get("path")
    if name not in ("write", "edit") or not isinstance(path, str):
        return None
    if name == "write":
        content = arguments.get("content")
        if not isinstance(content, str):
            return None
        body = [f"+{line}" for line in content.splitlines()]
        lines = [f"+++ b/{path}", *body]
    else:
        a, b = arguments.get("old_string"), arguments.get("new_string")
        if not isinstance(a, str) or not isinstance(b, str):
            return None
        diff = difflib.unified_diff(
            a.splitlines(), b.splitlines(), fromfile=f"a/{path}", tofile=f"b/{path}", lineterm=""
        )
        lines = ["@@" if line.startswith("@@") else line for line in diff]
        if not lines:  # old and new are the same text
            lines = [f"--- a/{path}", f"+++ b/{path}"]
    if len(lines) > MAX_CALL_DIFF_LINES:
        more = len(lines) - MAX_CALL_DIFF_LINES
        lines = [*lines[:MAX_CALL_DIFF_LINES], f"... {more} more lines"]
    return "\n".join(lines) + "\n"


def diff_counts(diff: str) -> tuple[int, int]:
    """(added, removed) lines of a unified diff, its file header (one `--- ` line, then one
    `+++ ` line, at the top) not counted: a body line may itself begin `++ `."""
    added = removed = 0
    body = diff.splitlines()
    k = 1 if body and body[0].startswith("--- ") else 0
    if k < len(body) and body[k].startswith("+++ "):
        k += 1
    for line in body[k:]:
        if line.startswith("+"):
            added += 1
        elif line.startswith("-"):
            removed += 1
    return added, removed

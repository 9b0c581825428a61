"""`tether sessions list`: which sessions (this folder's, or `--all`), how many (`--limit`), and
how (`--format table|json`: a table on a terminal, JSON lines otherwise).

Owns: `pick` (the rows a listing shows), `json_row` (a row as the JSON line scripts read) and
`table_lines` (the human table).
Does not own: reading the sessions (`tether.session.SessionStore.list`), the command's flags
(`tether.cli.sessions_cmds`).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from tether.session.model import SessionInfo

FORMATS = ("table", "json")
"""What `--format` takes."""


def pick(
    rows: Sequence[SessionInfo], *, folder: Path | None, limit: int | None
) -> list[SessionInfo]:
    """`rows` (newest first) started in `folder` (None: every folder's), the first `limit`."""
    if folder is not None:
        rows = [r for r in rows if r.cwd and Path(r.cwd) == folder]
    return list(rows[:limit] if limit is not None else rows)


def json_row(info: SessionInfo) -> dict[str, Any]:
    """One session as its JSON line (`--format json`: the keys scripts read)."""
    return {
        "id": info.id,
        "turns": info.turn_count,
        "created_ms": info.created_ms,
        "modified_ms": info.modified_ms,
        "cwd": info.cwd,
        "preview": info.preview,
        "parent": list(info.parent) if info.parent else None,
        "error": info.error,
        "skipped_lines": info.skipped_lines,
        "caller": info.caller,
        "name": info.name,
    }


PROMPT_CHARS = 40
"""How much of the first prompt `--all`'s table shows (the folder follows it)."""


def _cut(text: str) -> str:
    return text if len(text) <= PROMPT_CHARS else text[: PROMPT_CHARS - 1] + "…"


def _when(ms: int) -> str:
    return time.strftime("%Y-%m-%d %H:%M", time.localtime(ms / 1000))


def _about(info: SessionInfo) -> str:
    if info.error:
        return f"(unreadable: {info.error})"
    text = info.preview or "(no prompt)"
    if info.parent is not None:
        text = f"[fork of {info.parent[0]}] {text}"
    if info.caller is not None:
        text = f"[subagent of {info.caller}] {text}"
    return text


def table_lines(
    rows: Sequence[SessionInfo], *, folders: bool, width: int | None = None
) -> list[str]:
    """The human table: id, last change, messages, name, first prompt (and, with `folders`,
    the first prompt cut to `PROMPT_CHARS` and the folder last), one row per session, each cut
    to `width` columns (None: whole)."""
    head = ["ID", "CHANGED", "MESSAGES", "NAME", "FIRST PROMPT", *(["FOLDER"] if folders else [])]
    cells = [
        [
            r.id,
            _when(r.modified_ms),
            str(r.turn_count),
            r.name or "-",
            _cut(_about(r)) if folders else _about(r),
            *([r.cwd or "-"] if folders else []),
        ]
        for r in rows
    ]
    widths = [max(len(c[i]) for c in [head, *cells]) for i in range(len(head) - 1)]
    out: list[str] = []
    for c in [head, *cells]:
        padded = [
            f"{v:>{w}}" if i == 2 else f"{v:<{w}}"  # MESSAGES right-aligned
            for i, (v, w) in enumerate(zip(c[:-1], widths, strict=True))
        ]
        line = "  ".join([*padded, c[-1]])
        out.append(line[:width].rstrip() if width else line.rstrip())
    return out

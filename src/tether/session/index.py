"""The listing index: `SessionStore.list()` rows cached per session file, so a listing reads
only the files that changed since the last one.

Owns: the index file `<sessions root>/.list-index.json` (format below), reading it tolerantly
and replacing it atomically.
Does not own: what a row says (`tether.session.loader.summarize`), which files are sessions
(`tether.session.store`).

Format (JSON, version 3):
    {"version": 3, "rows": {"<session id>": {"size": int, "mtime_ns": int,
        "created_ms": int, "cwd": str, "turn_count": int, "preview": str,
        "parent": [str, str] | null, "error": str | null, "skipped_lines": int,
        "caller": str | null, "name": str | null,
        "held": {"chain": [[str, int, int], ...], "turns": int, "preview": str,
                 "error": str | null}}}}
`held` is on a fork's row only: the turns and first prompt of its whole history (the parent
chain's up to the fork point, then its own; `tether.session.loader.held`), or why that
history cannot be loaded, with the `[id, size, mtime_ns]` of the fork and each parent in the chain
it was read from; it is reused while those stamps are the chain's current ones.
An index of another version is ignored (rebuilt).
A row is used only while its file's size and mtime (ns) are the ones it was computed at; any
other row is recomputed from the file (the index is rebuilt when stale). The index is a cache:
a missing, unreadable or malformed index just means every file is read again, and a folder
where it cannot be written is listed all the same.
"""

from __future__ import annotations

import contextlib
import json
import os
from pathlib import Path
from typing import Any, cast

from tether.atomic import write_atomic
from tether.session.model import SessionInfo

INDEX_NAME = ".list-index.json"
"""The index file's name inside the sessions root (not a session: no `.jsonl` suffix)."""
INDEX_VERSION = 3

Stamp = tuple[int, int]
"""(size in bytes, mtime in ns) of a session file."""


def stamp_of(st: os.stat_result) -> Stamp:
    """The stamp a row is valid for."""
    return (st.st_size, st.st_mtime_ns)


def read_index(root: Path) -> dict[str, tuple[Stamp, dict[str, Any]]]:
    """The index rows by session id, each with its stamp; {} when there is no usable index."""
    try:
        data = json.loads((root / INDEX_NAME).read_bytes())
    except (OSError, ValueError, RecursionError):
        return {}
    if not isinstance(data, dict):
        return {}
    doc = cast(dict[str, Any], data)
    rows = doc.get("rows")
    if doc.get("version") != INDEX_VERSION or not isinstance(rows, dict):
        return {}
    out: dict[str, tuple[Stamp, dict[str, Any]]] = {}
    for sid, row in cast(dict[str, Any], rows).items():
        if not isinstance(row, dict):
            continue
        r = cast(dict[str, Any], row)
        size, mtime = r.get("size"), r.get("mtime_ns")
        if isinstance(size, int) and isinstance(mtime, int):
            out[sid] = ((size, mtime), r)
    return out


def info_from_row(
    sid: str, path: Path, modified_ms: int, row: dict[str, Any]
) -> SessionInfo | None:
    """The listing row an index row describes, or None when the row is malformed."""
    created, cwd, turns = row.get("created_ms"), row.get("cwd"), row.get("turn_count")
    preview, parent, error = row.get("preview"), row.get("parent"), row.get("error")
    skipped, caller, name = row.get("skipped_lines"), row.get("caller"), row.get("name")
    if not (
        isinstance(created, int)
        and isinstance(cwd, str)
        and isinstance(turns, int)
        and isinstance(preview, str)
        and isinstance(skipped, int)
        and (error is None or isinstance(error, str))
        and (caller is None or isinstance(caller, str))
        and (name is None or isinstance(name, str))
    ):
        return None
    pair: tuple[str, str] | None = None
    if parent is not None:
        items = cast(list[Any], parent) if isinstance(parent, list) else []
        if len(items) != 2 or not all(isinstance(x, str) for x in items):
            return None
        pair = (str(items[0]), str(items[1]))
    return SessionInfo(
        id=sid, path=path, created_ms=created, modified_ms=modified_ms, cwd=cwd,
        turn_count=turns, preview=preview, parent=pair, error=error, skipped_lines=skipped,
        caller=caller, name=name,
    )  # fmt: skip


def held_row(row: dict[str, Any], chain: list[list[Any]]) -> dict[str, Any] | None:
    """A fork row's cached `held` part while its parent chain is the one it was computed
    from (same sessions, same stamps), else None (recompute)."""
    held: object = row.get("held")
    if not isinstance(held, dict):
        return None
    h = cast(dict[str, Any], held)
    turns, preview, error = h.get("turns"), h.get("preview"), h.get("error")
    if (
        h.get("chain") != chain
        or not isinstance(turns, int)
        or not isinstance(preview, str)
        or not (error is None or isinstance(error, str))
    ):
        return None
    return h


def row_of(info: SessionInfo, stamp: Stamp) -> dict[str, Any]:
    """The index row of a listing row computed from a file with this stamp."""
    return {
        "size": stamp[0],
        "mtime_ns": stamp[1],
        "created_ms": info.created_ms,
        "cwd": info.cwd,
        "turn_count": info.turn_count,
        "preview": info.preview,
        "parent": list(info.parent) if info.parent else None,
        "error": info.error,
        "skipped_lines": info.skipped_lines,
        "caller": info.caller,
        "name": info.name,
    }


def write_index(root: Path, rows: dict[str, dict[str, Any]]) -> None:
    """Replace the index atomically (`tether.atomic.write_atomic`: two threads or processes
    writing it at once each leave a whole index); any OSError (a read-only folder, a full
    disk) is ignored: the index is only a cache."""
    body = json.dumps({"version": INDEX_VERSION, "rows": rows}, ensure_ascii=False)
    with contextlib.suppress(OSError):
        write_atomic(root / INDEX_NAME, body.encode("utf-8"), durable=False)

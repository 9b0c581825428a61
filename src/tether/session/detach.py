"""Making a fork self-contained, so that deleting the session it forks breaks nothing.

Owns: `detach_forks` (each fork of a session about to be deleted made self-contained),
`forks_of`, `detach_fork`, `detached_bytes` (a fork's new file: its history up to the fork point copied in, the
header without `parent_session`/`parent_entry`, references into the ancestors' artifact
folders turned into references into its own) and `copy_artifacts` (the files those references
name, copied into the fork's folder).
Does not own: the writer lock and removing the deleted session
(`tether.session.store.SessionStore.delete`), line parsing (`tether.session.reader`).

What a fork refers to in its ancestors' folders: persisted tool outputs (stubs name
`<root>/<id>/tool-results/<file>` by absolute path, or a legacy folder of older layouts) and
images (`"file": "<id>/images/<file>"`, relative to the root). Each is copied (hard-linked
when the file system allows) into the fork's own folder under the same name, and the
reference is rewritten. The copy happens before the fork's file is replaced (atomically), so a
kill at any moment leaves the fork either as it was (still a fork, its parent untouched) or
self-contained; at worst a few copied files the old fork does not name yet.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol, cast

from tether.atomic import write_atomic
from tether.errors import DetachError, SessionBusyError, SessionError
from tether.session.layout import SESSION_SUFFIX, validate_session_id
from tether.session.migrate import legacy_tool_results
from tether.session.model import SkippedLine
from tether.session.reader import TORN_EVENT, TurnEntry, read_header, scan_bytes

_MAX_DEPTH = 64
_TOOL_RESULTS = "tool-results"
_IMAGES = "images"
_NAME = rb"[A-Za-z0-9._-]+"


@dataclass(frozen=True, slots=True)
class Detached:
    """A fork's self-contained file and the files it must find in its own folder first.

    Attributes:
        data: the new file's bytes (header, the copied history, the fork's own lines).
        copies: `(source, destination)` artifact files, each to be copied before `data` is
            written.
        parent: the `(parent_session, parent_entry)` the fork had.
    """

    data: bytes
    copies: tuple[tuple[Path, Path], ...]
    parent: tuple[str, str]


def _escaped(s: str) -> bytes:
    """`s` as it appears inside a JSON string on a session line."""
    return json.dumps(s, ensure_ascii=False)[1:-1].encode("utf-8")


def _history(
    read: Callable[[str], tuple[Path, bytes]], sid: str, upto: str, seen: tuple[str, ...]
) -> tuple[list[tuple[str, bytes]], tuple[str, ...]]:
    """The `(id, line)` entry lines of `sid`'s history (a fork's parent chain first) up to and including
    the first entry `upto`, and the sessions those lines came from. Skipped lines and
    `torn_line` events (which name a line of a file the copy leaves) are left out.

    Raises:
        SessionError: a session is missing or not a session file, lacks the fork point, or the
            chain loops.
    """
    try:
        path, data = read(sid)
    except FileNotFoundError:
        raise SessionError(f"session {seen[-1]} is a fork of {sid}, which does not exist") from None
    scan = scan_bytes(data, path)
    lines: list[tuple[str, bytes]] = []
    sources: tuple[str, ...] = ()
    parent = scan.header.parent
    if parent is not None:
        if parent[0] in seen or parent[0] == sid or len(seen) >= _MAX_DEPTH:
            raise SessionError(f"session {sid}: fork chain loops or is too deep at {parent[0]}")
        lines, sources = _history(read, parent[0], parent[1], (*seen, sid))
    raw_lines: list[bytes] | None = None
    for item in scan.items:
        if isinstance(item, SkippedLine):
            continue
        if isinstance(item, TurnEntry):
            lines.append((item.id, item.raw))
            continue
        if item.type == "event" and item.record.get("kind") == TORN_EVENT:
            continue
        if item.salvaged:
            line = json.dumps(item.record, ensure_ascii=False, separators=(",", ":")).encode()
        else:
            if raw_lines is None:
                raw_lines = data.split(b"\n")
            line = raw_lines[item.line - 1]
        lines.append((item.id, line))
    cut = next((i for i, (eid, _) in enumerate(lines) if eid == upto), None)
    if cut is None:
        raise SessionError(f"session {seen[-1]} forks {sid} at entry {upto!r}, which {sid} lacks")
    return lines[: cut + 1], (*sources, sid)


def _own_lines(own: bytes, offset: int) -> bytes:
    """The fork's own lines, with each `torn_line` event's line number moved down by
    `offset` (the history copied above them)."""
    if b'"' + TORN_EVENT.encode() + b'"' not in own:
        return own
    out: list[bytes] = []
    for line in own.split(b"\n"):
        if TORN_EVENT.encode() in line:
            try:
                rec = json.loads(line)
            except ValueError:
                rec = None
            if isinstance(rec, dict):
                r = cast(dict[str, Any], rec)
                d = r.get("data")
                if r.get("kind") == TORN_EVENT and isinstance(d, dict):
                    n = cast(dict[str, Any], d).get("line")
                    if isinstance(n, int) and not isinstance(n, bool):
                        cast(dict[str, Any], d)["line"] = n + offset
                        line = json.dumps(r, ensure_ascii=False, separators=(",", ":")).encode()
        out.append(line)
    return b"\n".join(out)


def detached_bytes(
    root: Path, fork_id: str, read: Callable[[str], tuple[Path, bytes]]
) -> Detached | None:
    """The self-contained file of the fork `fork_id` (see the module doc), or None when it is
    not a fork.

    Args:
        root: the sessions root.
        fork_id: the fork.
        read: a session id → its `(path, bytes)`; FileNotFoundError when it does not exist.

    Raises:
        SessionError: the fork's history does not load (its parent chain is broken already).
        FileNotFoundError: the fork is gone.
    """
    _, data = read(fork_id)
    head_end = data.find(b"\n")
    scan_head = scan_bytes(data[: head_end + 1], root / fork_id)
    parent = scan_head.header.parent
    if parent is None or head_end < 0:
        return None
    history, sources = _history(read, parent[0], parent[1], (fork_id,))
    header = cast(dict[str, Any], json.loads(data[:head_end]))
    header.pop("parent_session", None)
    header.pop("parent_entry", None)
    header["detached_from"] = [parent[0], parent[1]]
    copies: dict[Path, Path] = {}
    own_results = root / fork_id / _TOOL_RESULTS
    body = b"\n".join(line for _, line in history)
    for sid in dict.fromkeys(sources):
        folders = [root / sid / _TOOL_RESULTS, *legacy_tool_results(root / sid)]
        for folder in folders:
            prefix = _escaped(str(folder) + os.sep)
            if prefix not in body:
                continue
            for m in re.finditer(re.escape(prefix) + b"(" + _NAME + b")", body):
                name = m.group(1).decode()
                copies[folder / name] = own_results / name
            body = body.replace(prefix, _escaped(str(own_results) + os.sep))
        images = b'"' + _escaped(f"{sid}/{_IMAGES}/")
        if images in body:
            for m in re.finditer(re.escape(images) + b"(" + _NAME + b")", body):
                name = m.group(1).decode()
                copies[root / sid / _IMAGES / name] = root / fork_id / _IMAGES / name
            body = body.replace(images, b'"' + _escaped(f"{fork_id}/{_IMAGES}/"))
    own = data[head_end + 1 :]
    head = json.dumps(header, ensure_ascii=False, separators=(",", ":")).encode() + b"\n"
    lines = head + (body + b"\n" if history else b"") + _own_lines(own, len(history))
    return Detached(data=lines, copies=tuple(copies.items()), parent=parent)


def copy_artifacts(copies: tuple[tuple[Path, Path], ...]) -> None:
    """Copy each `(source, destination)` file (a hard link when the file system allows, else
    an atomic durable copy); a destination that exists is kept (persisted outputs are named by
    call id, images by content hash), a source that is gone is skipped (its reference already
    pointed at nothing).

    Raises:
        OSError: a copy failed (nothing of the fork's file has changed yet).
    """
    for src, dst in copies:
        if os.path.lexists(dst):
            continue
        if src.is_symlink() or not src.is_file():
            continue
        dst.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        try:
            os.link(src, dst)
        except OSError:
            write_atomic(dst, src.read_bytes(), mode=0o600)
    for folder in {dst.parent for _, dst in copies}:
        if folder.is_dir():
            fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)


class _Lock(Protocol):
    def release(self) -> None: ...


def _read(root: Path, sid: str) -> tuple[Path, bytes]:
    path = root / f"{validate_session_id(sid)}{SESSION_SUFFIX}"
    return path, path.read_bytes()


def forks_of(root: Path, session_id: str) -> list[str]:
    """The ids of the sessions that fork `session_id` directly (their header names it as
    `parent_session`), from each file's header alone, sorted."""
    out: list[str] = []
    for path in root.glob(f"*{SESSION_SUFFIX}") if root.is_dir() else ():
        sid = path.name[: -len(SESSION_SUFFIX)]
        try:
            validate_session_id(sid)
            fd = os.open(path, os.O_RDONLY)
            try:
                header, _ = read_header(fd, path)
            finally:
                os.close(fd)
        except (SessionError, OSError):
            continue
        if header.parent_session == session_id and sid != session_id:
            out.append(sid)
    return sorted(out)


def detach_fork(root: Path, fork_id: str, lock: Callable[[str], _Lock]) -> bool:
    """Make the fork `fork_id` self-contained (the module doc) under its writer lock: the
    artifact files copied first, then its file replaced atomically.

    Returns:
        True when it was a fork and is now detached; False when it is not a fork.

    Raises:
        SessionBusyError: the fork is being written now.
        DetachError: a file cannot be copied or written (the fork's file is unchanged).
        SessionError: its history does not load (its parent chain is broken already).
        FileNotFoundError: the fork is gone.
    """
    held = lock(fork_id)
    try:
        plan = detached_bytes(root, fork_id, lambda sid: _read(root, sid))
        if plan is None:
            return False
        try:
            copy_artifacts(plan.copies)
            write_atomic(_read(root, fork_id)[0], plan.data, mode=0o600)
        except OSError as exc:
            raise DetachError(
                f"cannot give fork {fork_id} its own copy: {exc.strerror or exc}"
            ) from None
        return True
    finally:
        held.release()


def detach_forks(
    root: Path, session_id: str, lock: Callable[[str], _Lock]
) -> dict[str, tuple[str, ...]]:
    """Detach every fork of `session_id` (before it is deleted).

    Returns:
        `{"detached": forks now self-contained, "broken_forks": forks whose history did not
        load already, left as they were}` (`tether.session.reclaim.DeleteReport`'s fields).

    Raises:
        SessionBusyError: a fork is being written now (the message names it).
        SessionError: a fork could not be given its copy (the message names it).
    """
    detached: list[str] = []
    broken: list[str] = []
    for fork in forks_of(root, session_id):
        try:
            if detach_fork(root, fork, lock):
                detached.append(fork)
        except SessionBusyError:
            raise SessionBusyError(
                f"cannot delete {session_id}: its fork {fork} is being written by another "
                "process (nothing was deleted)"
            ) from None
        except DetachError as exc:
            raise SessionError(f"cannot delete {session_id}: {exc} (nothing was deleted)") from None
        except FileNotFoundError:
            continue
        except SessionError:
            broken.append(fork)
    return {"detached": tuple(detached), "broken_forks": tuple(broken)}

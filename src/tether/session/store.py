"""The session store: create, resume, load, fork, list and delete append-only JSONL sessions.

Owns: `SessionStore`, the on-disk layout's I/O (files `0o600`, folders `0o700`), resolving fork
chains.
Does not own: line parsing and salvage (`tether.session.reader`), turn validation and duplicate
removal (`tether.session.loader`), the append path (`tether.session.writer`), or what a turn
means (`tether.messages`).

Loading never writes to any file. File order is authoritative: `parent_id` links are recorded
for readers and tools but not needed to order entries, so a skipped line never cuts the
history. A fork's history is its parent's history (itself possibly a fork) up to and including
the fork-point entry, then the fork's own entries.
"""

from __future__ import annotations

import gc
import json
import os
import secrets
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tether.errors import SessionBusyError, SessionError, SessionNotFoundError
from tether.session.detach import detach_forks
from tether.session.index import (
    Stamp,
    held_row,
    info_from_row,
    read_index,
    row_of,
    stamp_of,
    write_index,
)
from tether.session.layout import (
    SESSION_SUFFIX,
    ArtifactKind,
    default_root,
    new_id,
    validate_session_id,
    wall_clock_ms,
)
from tether.session.loader import assemble, held, summarize
from tether.session.migrate import MigrationReport, legacy_folders, migrate_artifacts
from tether.session.model import (
    LoadedSession,
    SessionHeader,
    SessionInfo,
    SkippedLine,
)
from tether.session.reader import (
    FORMAT_VERSION,
    TORN_EVENT,
    Entry,
    last_entry_id,
    read_header,
    scan_bytes,
    torn_line_number,
)
from tether.session.reclaim import DeleteReport, remove_all
from tether.session.writer import SessionWriter

if TYPE_CHECKING:  # filelock is imported when a session is opened for writing
    from filelock import BaseFileLock

_MAX_FORK_DEPTH = 64

WRITER_LOCK = "writer.lock"
"""The writer lock's file name inside a session's artifact folder."""

_Timeline = list[Entry | SkippedLine]


def _create_with_header(path: Path, header_line: bytes) -> int:
    """Create `path` holding exactly `header_line`, atomically: the header is written to a
    hidden temp file in the same folder, which is then hard-linked into place (`link` fails when
    `path` exists, so creation stays exclusive). A kill at any instant leaves either no session
    file or one with its whole header (at worst a hidden `.<name>.<hex>.tmp` file).

    Returns:
        An `O_WRONLY | O_APPEND` descriptor on `path`.

    Raises:
        FileExistsError: `path` exists.
        OSError: the folder is not writable.
    """
    tmp = path.with_name(f".{path.name}.{secrets.token_hex(6)}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        try:
            view = memoryview(header_line)
            while view:
                view = view[os.write(fd, view) :]
            os.fsync(fd)
        finally:
            os.close(fd)
        os.link(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)
    return os.open(path, os.O_WRONLY | os.O_APPEND)


class SessionStore:
    """Sessions under one root folder (`<root>/<id>.jsonl` + `<root>/<id>/` artifacts).

    Attributes:
        root: the folder holding the sessions (created on the first `create`).
        migration: what the one-time artifact migration did when the store was opened (see
            `tether.session.migrate`).
    """

    def __init__(
        self,
        root: Path | None = None,
        *,
        clock_ms: Callable[[], int] = wall_clock_ms,
        id_factory: Callable[[], str] = new_id,
        migrate: bool = True,
    ) -> None:
        """Create a store. The only I/O: legacy artifact layouts under the root are folded
        into the current one (`tether.session.migrate.migrate_artifacts`; one `scandir` of
        the root when there is nothing to migrate, nothing when the root does not exist).

        Args:
            root: the sessions folder; None → `$TETHER_HOME/sessions` when `TETHER_HOME` is set,
                else `platformdirs.user_data_path("tether") / "sessions"`.
            clock_ms: integer Unix milliseconds, for `created_ms` and each entry's `ts_ms`.
            id_factory: fresh ids for sessions created without one and for events.
            migrate: run the artifact migration (False: no I/O at all).
        """
        self.root: Path = default_root() if root is None else Path(root)
        self._clock_ms = clock_ms
        self._id_factory = id_factory
        self.migration = MigrationReport()
        if migrate:
            try:
                self.migration = migrate_artifacts(self.root)
            except OSError as e:  # an unreadable root: the operations will report it
                self.migration = MigrationReport(errors=(f"{self.root}: {e}",))

    # ---- paths ---------------------------------------------------------------------------

    def new_session_id(self) -> str:
        """A fresh session id from the store's id factory (nothing is created)."""
        return validate_session_id(self._id_factory())

    def path(self, session_id: str) -> Path:
        """The session file `<root>/<id>.jsonl`. Raises SessionError on an invalid id."""
        return self.root / f"{validate_session_id(session_id)}{SESSION_SUFFIX}"

    def session_dir(self, session_id: str) -> Path:
        """The session folder `<root>/<id>/`, holding its artifacts (not created). Raises
        SessionError on a bad id."""
        return self.root / validate_session_id(session_id)

    def artifact_subdir(self, session_id: str, kind: ArtifactKind, *, create: bool = True) -> Path:
        """`<root>/<id>/<kind>/` (`tool-results`, `tasks` or `mcp-warnings`), created lazily.

        Args:
            session_id: the session id.
            kind: the sub-folder.
            create: create it (and its parents, mode 0o700) when missing.

        Raises:
            SessionError: invalid id.
        """
        sub = self.session_dir(session_id) / kind
        if create:
            sub.mkdir(mode=0o700, parents=True, exist_ok=True)
        return sub

    def exists(self, session_id: str) -> bool:
        """True when the session file exists. Raises SessionError on an invalid id."""
        return self.path(session_id).is_file()

    def find(self, ref: str, cwd: Path | None = None) -> str | None:
        """The session `ref` names: its id when a session has that id, else the newest
        session named `ref` (one started in `cwd` first; `tether.session.names`), else None."""
        from tether.session.names import named

        try:
            if self.exists(ref):
                return ref
        except SessionError:  # not an id: maybe a name
            pass
        found = named(self.list(), ref, cwd)
        return found[0].id if found else None

    # ---- writing -------------------------------------------------------------------------

    def create(
        self,
        session_id: str | None = None,
        *,
        cwd: str,
        parent: tuple[str, str] | None = None,
        caller: tuple[str, str, tuple[str, ...]] | None = None,
    ) -> SessionWriter:
        """Create a session file holding only its header, and return a writer on it.

        Args:
            session_id: the id; a fresh one from the id factory when None.
            cwd: the working directory to record.
            parent: `(parent_session_id, entry_id)` to fork: the new session's history is the
                parent's up to and including that entry. The parent is loaded to check it.
            caller: for a subagent's session, `(caller_session_id, task_tool_call_id,
                agent_path)` recorded in the header (nothing is inherited from the caller).

        Returns:
            A writer whose `last_entry_id` is None, or the fork-point entry id for a fork.

        Raises:
            SessionError: invalid id, the session already exists, or the fork point is not an
                entry of the parent's history.
            SessionNotFoundError: the parent session does not exist.
        """
        sid = validate_session_id(self._id_factory() if session_id is None else session_id)
        header = self._header(sid, cwd=cwd, parent=parent, caller=caller)
        path = self.path(sid)
        try:
            self.root.mkdir(mode=0o700, parents=True, exist_ok=True)
            lock = self._lock_for_writing(sid)
        except OSError as exc:
            raise SessionError(
                f"cannot create session {sid} under {self.root}: {exc.strerror or exc}"
            ) from None
        try:
            fd = _create_with_header(
                path, json.dumps(header, ensure_ascii=False, separators=(",", ":")).encode() + b"\n"
            )
        except FileExistsError:
            lock.release()
            raise SessionError(f"session {sid} already exists at {path}") from None
        except OSError as exc:
            lock.release()
            raise SessionError(f"cannot create session file {path}: {exc.strerror or exc}") from None
        except BaseException:
            lock.release()
            raise
        return SessionWriter(
            fd,
            session_id=sid,
            path=path,
            last_entry_id=None if parent is None else parent[1],
            clock_ms=self._clock_ms,
            id_factory=self._id_factory,
            sync_dir=True,
            lock=lock,
        )

    def _header(
        self,
        sid: str,
        *,
        cwd: str,
        parent: tuple[str, str] | None,
        caller: tuple[str, str, tuple[str, ...]] | None,
    ) -> dict[str, object]:
        """A new session's header record (`create`'s arguments); a fork's parent is loaded to
        check its fork point (SessionError when it lacks it)."""
        header: dict[str, object] = {
            "type": "session",
            "version": FORMAT_VERSION,
            "id": sid,
            "created_ms": self._clock_ms(),
            "cwd": cwd,
        }
        if parent is not None:
            p_sid, p_entry = parent
            loaded = self.load(p_sid)
            known = {t.id for t in loaded.turns} | {e.id for e in loaded.events}
            if p_entry not in known:
                raise SessionError(f"cannot fork {p_sid}: it has no entry {p_entry!r}")
            header["parent_session"], header["parent_entry"] = p_sid, p_entry
        if caller is not None:
            header["caller_session"], header["caller_tool_call"] = caller[0], caller[1]
            header["agent_path"] = list(caller[2])
        return header

    def open_for_append(self, session_id: str) -> SessionWriter:
        """Resume writing to an existing session.

        If the file does not end with a newline (a crash mid-append), a newline is written
        first so the torn fragment stays alone on its line, and when the fragment is damaged
        (the torn tail a load reported), a `torn_line` event naming its line follows it: later
        loads leave that line out of their report instead of naming it again as a malformed
        line (`tether.session.loader.assemble`). Reads only the header and, from the end,
        enough lines to find the last entry id (the whole file only after a crash mid-write).

        Returns:
            A writer whose `last_entry_id` is the last well-formed entry's id (or the fork point
            of a fork with no own entries, or None).

        Raises:
            SessionError: invalid id, or the file is not a tether session.
            SessionNotFoundError: no such session.
        """
        path = self.path(session_id)
        try:
            fd = os.open(path, os.O_RDWR | os.O_APPEND)
        except FileNotFoundError:
            raise SessionNotFoundError(f"no session {session_id} in {self.root}") from None
        lock = None
        try:
            try:
                header, start = read_header(fd, path)
            except SessionError:
                data = path.read_bytes()
                header = scan_bytes(data, path).header  # a damaged header salvaged, or raises
                start = data.find(b"\n") + 1
            lock = self._lock_for_writing(session_id)
            size = os.fstat(fd).st_size
            torn_line = None
            if os.pread(fd, 1, size - 1) != b"\n":
                torn_line = torn_line_number(fd, size, path)
                os.write(fd, b"\n")
            last = last_entry_id(fd, size, start, path) or header.parent_entry
        except BaseException:
            os.close(fd)
            if lock is not None:
                lock.release()
            raise
        writer = SessionWriter(
            fd,
            session_id=session_id,
            path=path,
            last_entry_id=last,
            clock_ms=self._clock_ms,
            id_factory=self._id_factory,
            lock=lock,
        )
        if torn_line is not None:  # the load that resumed it reported it: later ones do not
            writer.append_event(TORN_EVENT, {"line": torn_line})
        return writer

    def check_writable(self, session_id: str) -> None:
        """Raise `SessionBusyError` when another process writes the session now (its writer
        lock is held); for a host that would open it later (`tether chat --resume`), to say
        so before its screen opens."""
        self._lock_for_writing(session_id).release()

    def _lock_for_writing(self, session_id: str) -> BaseFileLock:
        """Take the session's writer lock (`<artifact dir>/writer.lock`, an OS `flock` via the
        `filelock` library: released by the OS if the process dies, even by SIGKILL).

        Raises:
            SessionBusyError: another writer holds it (two processes appending to one session
                would interleave their turns).
        """
        folder = self.session_dir(session_id)
        folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        from filelock import FileLock, Timeout

        lock = FileLock(folder / WRITER_LOCK, timeout=0)
        try:
            lock.acquire()
        except Timeout:
            raise SessionBusyError(
                f"session {session_id} is being written by another process"
            ) from None
        return lock

    # ---- reading -------------------------------------------------------------------------

    def _timeline(
        self, session_id: str, seen: tuple[str, ...]
    ) -> tuple[SessionHeader, Path, _Timeline, bool]:
        """Header, path, raw timeline (parent prefix + own items) and own torn-tail flag."""
        path = self.path(session_id)
        try:
            data = self._read_bytes(session_id, path)
        except FileNotFoundError:
            if seen:
                raise SessionError(
                    f"session {seen[-1]} is a fork of {session_id}, which does not exist"
                ) from None
            raise SessionNotFoundError(f"no session {session_id} in {self.root}") from None
        scan = scan_bytes(data, path)
        timeline: _Timeline = []
        parent = scan.header.parent
        if parent is not None:
            p_sid, p_entry = parent
            if p_sid in seen or p_sid == session_id or len(seen) >= _MAX_FORK_DEPTH:
                raise SessionError(
                    f"session {session_id}: fork chain loops or is too deep at {p_sid}"
                )
            _, _, p_timeline, _ = self._timeline(p_sid, (*seen, session_id))
            cut = next(
                (
                    i
                    for i, it in enumerate(p_timeline)
                    if not isinstance(it, SkippedLine) and it.id == p_entry
                ),
                None,
            )
            if cut is None:
                raise SessionError(
                    f"session {session_id} forks {p_sid} at entry {p_entry!r}, which {p_sid} lacks"
                )
            timeline.extend(p_timeline[: cut + 1])
        timeline.extend(scan.items)
        return scan.header, path, timeline, scan.torn_tail

    def _read_bytes(self, session_id: str, path: Path) -> bytes:
        """A session's whole contents (header line, then entry lines), as its file holds them.

        Raises:
            FileNotFoundError: no such session.
        """
        return path.read_bytes()

    def load(self, session_id: str) -> LoadedSession:
        """Read a session (and, for a fork, its parent chain). Never writes.

        Damaged lines are skipped and reported, a torn last line is flagged, complete entries
        fused after a torn prefix are salvaged, a turn that fails validation or whose id differs
        from its entry id is skipped and reported, and of entries sharing an id the first is
        kept and the others reported.

        Returns:
            The loaded session (see `LoadedSession`, `LoadReport`).

        Raises:
            SessionError: invalid id; the file (or a parent's) is not a tether session (missing
                or malformed header: continuing could silently drop a fork's parent history);
                a fork's parent lacks the fork point, is missing, or the fork chain loops.
            SessionNotFoundError: no such session.
        """
        # Loading allocates one container per JSON value and frees none of them: the cyclic GC
        # would scan the growing heap over and over (half the load time of a big session). The
        # image pass runs paused too: its first allocation with the GC back on would scan every
        # object the load made (a tenth of the load time).
        from tether.session.images import restore

        paused = gc.isenabled()
        gc.disable()
        try:
            header, path, timeline, torn = self._timeline(session_id, ())
            loaded = assemble(header, path, timeline, torn)
            del timeline  # the lines' bytes and envelopes
            turns = restore(loaded.turns, self.root)  # image bytes back in
        finally:
            if paused:
                gc.enable()
        return loaded if turns is loaded.turns else replace(loaded, turns=turns)

    def list(self) -> list[SessionInfo]:
        """Every session under the root, most recently modified first.

        Cheap: reads each file once without validating turns (counts turn lines, parses the
        header and the first user turn), and only when it changed since the last listing: the
        rows are cached in `tether.session.index` (size + mtime checked per file), so a warm
        listing only stats the files. Files whose header is unreadable are listed with
        `error` set; files whose name is not a valid session id are ignored.
        """
        if not self.root.is_dir():
            return []
        cached = read_index(self.root)
        rows: dict[str, dict[str, Any]] = {}
        stamps: dict[str, Stamp] = {}
        changed = False
        infos: list[SessionInfo] = []
        for path in self.root.glob(f"*{SESSION_SUFFIX}"):
            sid = path.name[: -len(SESSION_SUFFIX)]
            try:
                validate_session_id(sid)
                st = path.stat()
            except (SessionError, OSError):
                continue
            stamp, modified_ms = stamp_of(st), st.st_mtime_ns // 1_000_000
            hit = cached.get(sid)
            info = None
            if hit is not None and hit[0] == stamp:
                info = info_from_row(sid, path, modified_ms, hit[1])
            if info is None:
                try:
                    data = path.read_bytes()
                except OSError:
                    continue
                info = summarize(sid, path, data, modified_ms)
                # the file may have grown while it was read: index the size actually read
                stamp = (len(data), stamp[1]) if len(data) != stamp[0] else stamp
                changed = True
            rows[sid] = row_of(info, stamp)
            stamps[sid] = stamp
            infos.append(info)
        own = {i.id: i for i in infos}
        for n, info in enumerate(infos):
            if info.parent is None or info.error is not None:
                continue
            hit = cached.get(info.id)
            chain = self._chain(info.id, own, stamps)
            row = None if hit is None else held_row(hit[1], chain)
            if row is None:
                row = self._held_row(info.id, chain)
                changed = True
            rows[info.id]["held"] = row
            infos[n] = replace(
                info, turn_count=row["turns"], preview=row["preview"], error=row["error"]
            )
        if changed or len(rows) != len(cached):
            write_index(self.root, rows)
        infos.sort(key=lambda i: (i.modified_ms, i.id), reverse=True)
        return infos

    def _chain(
        self, sid: str, own: dict[str, SessionInfo], stamps: dict[str, Stamp]
    ) -> list[list[Any]]:
        """`[id, size, mtime_ns]` of a fork and each session in its parent chain (their files'
        stamps now), up to the first one that is not a fork, missing or already named: what
        the fork's held count is computed from, so the count is reused only while none of them
        changed."""
        chain: list[list[Any]] = [[sid, *stamps[sid]]]
        at = own[sid].parent
        while at is not None and at[0] in stamps and len(chain) <= _MAX_FORK_DEPTH:
            p_sid = at[0]
            if any(c[0] == p_sid for c in chain):
                break
            chain.append([p_sid, *stamps[p_sid]])
            at = own[p_sid].parent
        return chain

    def _held_row(self, sid: str, chain: list[list[Any]]) -> dict[str, Any]:
        """A fork's held turns and preview (`tether.session.loader.held`) read from its chain,
        or the reason its history cannot be loaded (a missing parent, a lost fork point)."""
        try:
            _, _, timeline, _ = self._timeline(sid, ())
        except (SessionError, OSError) as exc:
            return {"chain": chain, "turns": 0, "preview": "", "error": str(exc)}
        turns, preview = held(timeline)
        return {"chain": chain, "turns": turns, "preview": preview, "error": None}

    def latest(self, cwd: Path) -> str | None:
        """The id of the most recently modified session started in `cwd` (subagents' sessions
        left out), or None: what `list()` would name, from each file's header alone. For
        `tether run --continue`: the listing decodes the whole file of a row it has not
        indexed at its size (the newest session's, after its last run), and the resume that
        follows decodes it again.
        """
        if not self.root.is_dir():
            return None
        best: tuple[int, str] | None = None
        for path in self.root.glob(f"*{SESSION_SUFFIX}"):
            sid = path.name[: -len(SESSION_SUFFIX)]
            try:
                validate_session_id(sid)
                fd = os.open(path, os.O_RDONLY)
                try:
                    modified_ms = os.fstat(fd).st_mtime_ns // 1_000_000
                    header, _ = read_header(fd, path)
                finally:
                    os.close(fd)
            except (SessionError, OSError):
                continue
            ours = header.caller_session is None and header.cwd and Path(header.cwd) == cwd
            if ours and (best is None or (modified_ms, sid) > best):
                best = (modified_ms, sid)
        return None if best is None else best[1]

    def delete(self, session_id: str, *, keep_forks: bool = True) -> DeleteReport:
        """Remove the session file, its whole artifact folder (persisted tool outputs, task
        logs, MCP warnings, the writer lock) and its legacy artifact folders
        (`tether.session.migrate.legacy_folders`: persisted outputs of older layouts, which the
        migration leaves in place, and what a migration conflict left). Any of them missing is
        fine; a symlink is unlinked, never followed.

        Best effort: an entry that cannot be removed (a permission error) does not stop the
        rest; it is counted in the report's `errors`, and nothing raises for it.

        Idempotent in effect: once all are gone, a repeat call changes nothing and raises
        `SessionNotFoundError` (as for any unknown session), so callers can tell "deleted"
        from "was never there". It never breaks another session: first each fork of it gets
        its own copy of what it read from it (`tether.session.detach`; `keep_forks=False`
        skips that, and the forks no longer load).

        Returns:
            A `DeleteReport` (what was removed, what could not be, the forks detached).

        Raises:
            SessionError: invalid id; a fork could not be given its copy (nothing is removed).
            SessionBusyError: a writer (a run in another process, or an open `SessionWriter`)
                holds the session or a fork of it; nothing is removed.
            SessionNotFoundError: neither the file nor the folder exists.
        """
        path, folder = self.path(session_id), self.session_dir(session_id)
        live = folder.is_dir() and not folder.is_symlink()  # a live run's session is not deleted
        lock = self._lock_for_writing(session_id) if live else None
        try:
            targets = [path, folder, *legacy_folders(self.root, session_id)]
            if not any(os.path.lexists(t) for t in targets):
                raise SessionNotFoundError(f"no session {session_id} in {self.root}")
            kept = detach_forks(self.root, session_id, self._lock_for_writing) if keep_forks else {}
            # the artifacts first: a session file left behind still lists the session
            return replace(remove_all([*targets[1:], path]), **kept)
        finally:
            if lock is not None:
                lock.release()

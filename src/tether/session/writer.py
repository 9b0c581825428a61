"""Appending entries to one session file: one `os.write` of `json + "\\n"` per entry.

Owns: `SessionWriter` (an `O_APPEND` file descriptor, the entry encoding, `sync`/`close`).
Does not own: creating or resuming sessions (`SessionStore.create` / `open_for_append` build
writers), nor reading (`tether.session.reader`).

Entry lines written here::

    {"type":"turn","id":<turn.id>,"parent_id":<previous entry id|null>,"ts_ms":<int>,"turn":{…}}
    {"type":"event","id":<id>,"parent_id":<…>,"ts_ms":<int>,"kind":<str>,"data":{…}}

Each entry is one unbuffered `write(2)` on an `O_APPEND` descriptor, so there is nothing to
flush, and concurrent writers on one file never interleave inside a line (Linux serializes
appends to a regular file). `sync()` adds durability (`fsync`) when the caller asks for it: the
tool outputs saved in the artifact folder since the last sync first (the output gate does not
fsync them, `tether.tools.exec.persist`), then the session file, so no synced line names a file the
disk may lack. Image bytes go to the artifact folder too (`tether.session.images`): the line
keeps a reference.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any

from orjson import dumps as _orjson_dumps

from tether.errors import SessionError

if TYPE_CHECKING:
    from filelock import BaseFileLock

    from tether.messages import Turn

_TOOL_RESULTS = "tool-results"
"""The artifact sub-folder of persisted tool outputs (`tether.session.layout`)."""
SYNCED_FOLDERS = (_TOOL_RESULTS, "images")
"""The artifact sub-folders `sync()` makes durable before the session file."""

_TURN_HEAD = b'{"type":"turn","id":'
_EVENT_HEAD = b'{"type":"event","id":'
_NULL = b"null"
_EVENT_DATA = json.JSONEncoder(ensure_ascii=False, allow_nan=False, separators=(",", ":"))
"""An event's `data` encoder: `json.dumps` with these options builds a new encoder per call."""


def _turn_json(turn: Turn) -> bytes:
    """`tether.messages.turn_to_json`, imported on first use (listing sessions needs no
    pydantic; see bench/startup.py)."""
    global _turn_json
    from tether.messages import turn_to_json

    _turn_json = turn_to_json
    return turn_to_json(turn)


def _has_inline_images(turn: Turn) -> bool:
    """`tether.session.images.has_inline_images`, imported on first use (as `_turn_json`)."""
    global _has_inline_images
    from tether.session.images import has_inline_images

    _has_inline_images = has_inline_images
    return has_inline_images(turn)


def _jstr(s: str) -> bytes:
    """A JSON string literal (UTF-8 bytes), escaping quotes, backslashes and control chars:
    `json.dumps(s, ensure_ascii=False)`'s bytes, written by orjson (one C call); a lone
    surrogate raises `UnicodeEncodeError` as the `json` way does."""
    try:
        return _orjson_dumps(s)
    except TypeError:  # orjson.JSONEncodeError: a lone surrogate
        return json.dumps(s, ensure_ascii=False).encode("utf-8")


def _data_json(data: dict[str, Any]) -> bytes:
    """An event's `data` as `_EVENT_DATA` encodes it (UTF-8): a dict of strings (a
    `tool_call_started` record, one per call) is written by orjson in one call, the same
    bytes without the encoder's generic pass."""
    for k, v in data.items():
        if type(k) is not str or type(v) is not str:
            return _EVENT_DATA.encode(data).encode("utf-8")
    try:
        return _orjson_dumps(data)
    except TypeError:  # a lone surrogate: the encoder's way (it raises UnicodeEncodeError)
        return _EVENT_DATA.encode(data).encode("utf-8")


class SessionWriter:
    """Appends turns and events to one session file. Not thread-safe; one writer per run.

    Build one with `SessionStore.create` or `SessionStore.open_for_append`. Use it as a context
    manager or call `close()`.

    Attributes (read-only):
        id: the session id.
        path: the session file.
        last_entry_id: the id of the last entry written or found on open (the fork point for
            a fresh fork), or None before the first entry. The next entry's `parent_id`.
    """

    __slots__ = (
        "_clock_ms",
        "_dir_fd_path",
        "_fd",
        "_id",
        "_id_factory",
        "_last",
        "_last_json",
        "_lock",
        "_path",
        "_synced_outputs",
        "_torn",
    )

    def __init__(
        self,
        fd: int,
        *,
        session_id: str,
        path: Path,
        last_entry_id: str | None,
        clock_ms: Callable[[], int],
        id_factory: Callable[[], str],
        sync_dir: bool = False,
        lock: BaseFileLock | None = None,
    ) -> None:
        """Wrap an open descriptor (owned from now on).

        Args:
            fd: a descriptor opened with `O_APPEND` (and write access) on `path`.
            session_id: the session id.
            path: the session file.
            last_entry_id: the id the next entry's `parent_id` names, or None.
            clock_ms: integer Unix milliseconds, called once per entry.
            id_factory: a fresh id for events.
            sync_dir: fsync the parent folder on the first `sync()` (a new file's name must
                be durable too).
            lock: the session's held writer lock (owned from now on; released by `close()`).
        """
        self._lock = lock
        self._fd: int | None = fd
        self._id = session_id
        self._path = path
        self._clock_ms = clock_ms
        self._id_factory = id_factory
        self._last = last_entry_id
        self._last_json = _NULL if last_entry_id is None else _jstr(last_entry_id)
        self._torn = False
        self._dir_fd_path: Path | None = path.parent if sync_dir else None
        self._synced_outputs: set[str] = set()

    @property
    def id(self) -> str:
        """The session id."""
        return self._id

    @property
    def session_dir(self) -> Path:
        """The session folder, `<sessions>/<id>/` next to its file, holding its artifacts (not
        created)."""
        return self._path.parent / self._id

    @property
    def path(self) -> Path:
        """The session file."""
        return self._path

    @property
    def last_entry_id(self) -> str | None:
        """The id the next entry's `parent_id` will name (None before any entry)."""
        return self._last

    @property
    def closed(self) -> bool:
        """True after `close()`."""
        return self._fd is None

    def _write(self, data: bytes, entry_id: str, entry_json: bytes) -> None:
        fd = self._fd
        if fd is None:
            raise SessionError(f"session {self._id} writer is closed")
        if self._torn:
            data = b"\n" + data  # isolate the fragment a failed write left behind
        n = os.write(fd, data)
        if n != len(data):
            self._finish_short_write(fd, data, n)
        self._torn = False
        self._last = entry_id
        self._last_json = entry_json

    def _finish_short_write(self, fd: int, data: bytes, n: int) -> None:
        """Complete a short write (disk full, signal); on failure the next entry starts afresh."""
        self._torn = True
        view = memoryview(data)
        while n < len(data):
            n += os.write(fd, view[n:])

    def append(self, turn: Turn) -> None:
        """Append one turn as a `turn` entry: a single `write` of the line, no buffering.
        Inline image bytes are written to `session_dir/images/` first and the line holds their
        reference (`tether.session.images.externalize`).

        Args:
            turn: the turn; its id becomes the entry id and the next entry's `parent_id`.

        Raises:
            SessionError: the writer is closed.
            OSError: the write failed (e.g. disk full); the writer stays usable and isolates
                any fragment left behind with a newline on the next append.
        """
        if self._fd is None:
            raise SessionError(f"session {self._id} writer is closed")
        if _has_inline_images(turn):
            from tether.session.images import externalize

            turn = externalize(turn, self._id, self.session_dir)
        tid = _jstr(turn.id)
        self._write(
            b"".join(
                (
                    _TURN_HEAD,
                    tid,
                    b',"parent_id":',
                    self._last_json,
                    b',"ts_ms":',
                    b"%d" % self._clock_ms(),
                    b',"turn":',
                    _turn_json(turn),
                    b"}\n",
                )
            ),
            turn.id,
            tid,
        )

    def append_event(self, kind: str, data: dict[str, Any], *, event_id: str | None = None) -> str:
        """Append a non-turn record (compaction note, usage note, …) as an `event` entry.

        Args:
            kind: what the event is (e.g. `compaction`, `usage`); loaders surface it as
                `EventEntry.kind`.
            data: a JSON-ready object (no NaN/Infinity).
            event_id: the entry id; a fresh one from the id factory when None.

        Returns:
            The entry id.

        Raises:
            SessionError: the writer is closed.
            TypeError, ValueError: `data` is not JSON-serializable.
            OSError: the write failed (see `append`).
        """
        eid = self._id_factory() if event_id is None else event_id
        ejson = _jstr(eid)
        body = _data_json(data)
        line = b"".join(
            (
                _EVENT_HEAD,
                ejson,
                b',"parent_id":',
                self._last_json,
                b',"ts_ms":',
                b"%d" % self._clock_ms(),
                b',"kind":',
                _jstr(kind),
                b',"data":',
                body,
                b"}\n",
            )
        )
        self._write(line, eid, ejson)
        return eid

    def sync(self) -> None:
        """`fsync` the tool outputs and images saved in `session_dir/tool-results/` and
        `session_dir/images/` since the last sync (and those folders), then the session file (and, once, its folder for a new session), so
        entries and the files they name survive a power loss or an OS crash.

        Raises:
            SessionError: the writer is closed.
            OSError: fsync failed.
        """
        if self._fd is None:
            raise SessionError(f"session {self._id} writer is closed")
        for folder in SYNCED_FOLDERS:
            self._sync_outputs(folder)
        os.fsync(self._fd)
        if self._dir_fd_path is not None:
            dfd = os.open(self._dir_fd_path, os.O_RDONLY)
            try:
                os.fsync(dfd)
            finally:
                os.close(dfd)
            self._dir_fd_path = None

    def _sync_outputs(self, name: str) -> None:
        """fsync each finished file of the artifact sub-folder `name` not synced by this writer
        yet, then the folder (temp files, named `.<name>.<pid>-<n>.tmp`, are skipped)."""
        folder = self.session_dir / name
        try:
            entries = [e for e in os.scandir(folder) if not e.name.startswith(".")]
        except FileNotFoundError:
            return
        fresh = [e for e in entries if f"{name}/{e.name}" not in self._synced_outputs]
        if not fresh:
            return
        for entry in fresh:
            fd = os.open(entry.path, os.O_RDONLY | os.O_NOFOLLOW)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)
        dfd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
        try:
            os.fsync(dfd)
        finally:
            os.close(dfd)
        self._synced_outputs.update(f"{name}/{e.name}" for e in fresh)

    def close(self) -> None:
        """Close the descriptor. Idempotent. Does not fsync (call `sync()` first if needed)."""
        fd, self._fd = self._fd, None
        if fd is not None:
            os.close(fd)
        lock, self._lock = self._lock, None
        if lock is not None:
            lock.release()

    def __enter__(self) -> SessionWriter:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def __del__(self) -> None:
        fd = getattr(self, "_fd", None)
        if fd is not None:
            os.close(fd)

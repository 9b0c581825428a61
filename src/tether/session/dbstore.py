"""Sessions in a SQL database (SQLite or PostgreSQL): the store every Jobs worker can read.

Owns: `DbSessionStore` (a `SessionStore` whose session files are rows), `DbSessionWriter`, the
two tables, and `open_engine` (one SQLAlchemy engine per database URL per process, SQLite set
up as DBOS sets it up: `BEGIN IMMEDIATE`, a 30 s busy timeout; a SQLite connection goes back
to the pool with no query left open, `_close_left_open`).
Does not own: the entry format, the header, salvage and loader rules: a session's rows joined
by newlines are exactly the bytes a JSONL session file would hold, and they are read by the
same `tether.session.reader.scan_bytes` and `tether.session.loader.assemble`.

Tables::

    tether_session_entries(session_id, seq, line, written_ms)   seq 0: the header line
    tether_session_writers(session_id, token)                    who may append now

Append-only: an entry is one row, inserted in its own transaction (committed when `append`
returns; on SQLite in WAL mode without an fsync per commit, as a JSONL append has none). One writer at a time, across machines: `create`, `open_for_append` and
`take_over` write a fresh token into the session's writer row; each append first re-writes
that row with its own token (a row lock on PostgreSQL, the database lock on SQLite), so an
append of a writer whose token was replaced raises `SessionBusyError` and lands nothing (a
worker declared dead that comes back cannot add to a session another worker took over).
Artifacts (tool outputs cut to files) stay in the local folder `<root>/<id>/`.
"""

from __future__ import annotations

import json
import secrets
import threading
import weakref
from collections.abc import Callable
from pathlib import Path
from typing import Any

import sqlalchemy as sa
from sqlalchemy import event
from sqlalchemy.exc import IntegrityError, OperationalError, ProgrammingError

from tether.errors import SessionBusyError, SessionError, SessionNotFoundError
from tether.session.layout import new_id, validate_session_id, wall_clock_ms
from tether.session.loader import summarize
from tether.session.model import SessionInfo
from tether.session.reader import parse_header, parse_line, scan_bytes
from tether.session.reclaim import DeleteReport, remove_all
from tether.session.store import SessionStore
from tether.session.writer import SYNCED_FOLDERS, SessionWriter

LABEL = "jobs-database"
"""The first part of a database session's `path` (`jobs-database/<id>`), which names no file."""

METADATA = sa.MetaData()
ENTRIES = sa.Table(
    "tether_session_entries",
    METADATA,
    sa.Column("session_id", sa.String(128), primary_key=True),
    sa.Column("seq", sa.Integer, primary_key=True, autoincrement=False),
    sa.Column("line", sa.LargeBinary, nullable=False),
    sa.Column("written_ms", sa.BigInteger, nullable=False),
)
WRITERS = sa.Table(
    "tether_session_writers",
    METADATA,
    sa.Column("session_id", sa.String(128), primary_key=True),
    sa.Column("token", sa.String(64), nullable=False),
)

_OPEN_CURSORS = "tether_open_cursors"
"""The key, in a pooled SQLite connection's `info`, of the cursors its queries ran on."""

_ENGINES: dict[str, sa.Engine] = {}
_READY: set[str] = set()
_ENGINES_LOCK = threading.Lock()


def open_engine(url: str, *, wal: bool = False) -> sa.Engine:
    """This process's engine on `url` (`sqlite:///…` or `postgresql://…`, the psycopg 3
    driver), created on first use. `wal`: a SQLite file is put in WAL mode and this engine's
    commits do not fsync (`synchronous=NORMAL`: a commit survives a killed process at once, a
    power loss once checkpointed); the first call for a URL decides.

    Raises:
        sqlalchemy.exc.SQLAlchemyError: the URL is malformed.
    """
    with _ENGINES_LOCK:
        engine = _ENGINES.get(url)
        if engine is None:
            engine = _make_engine(url, wal)
            _ENGINES[url] = engine
        return engine


def _make_engine(url: str, wal: bool) -> sa.Engine:
    parsed = sa.make_url(url)
    if parsed.drivername in ("postgresql", "postgres"):
        parsed = parsed.set(drivername="postgresql+psycopg")
    if not parsed.drivername.startswith("sqlite"):
        # a process frozen inside a transaction (a paused VM) must not hold its row locks
        # forever: the server ends such a session after 10 s
        opts = "-c idle_in_transaction_session_timeout=10000"
        return sa.create_engine(parsed, pool_pre_ping=True, connect_args={"options": opts})
    if parsed.database and parsed.database != ":memory:":
        Path(parsed.database).parent.mkdir(parents=True, exist_ok=True)
    engine = sa.create_engine(parsed)

    @event.listens_for(engine, "connect")
    def _immediate(dbapi_conn: Any, _record: Any) -> None:  # pyright: ignore[reportUnusedFunction]
        dbapi_conn.isolation_level = "IMMEDIATE"  # writers serialized, as DBOS sets it
        dbapi_conn.execute("PRAGMA busy_timeout=30000")
        if wal:
            dbapi_conn.execute("PRAGMA journal_mode=WAL")
            dbapi_conn.execute("PRAGMA synchronous=NORMAL")

    @event.listens_for(engine, "after_cursor_execute")
    def _opened(conn: sa.Connection, cursor: Any, *_: Any) -> None:  # pyright: ignore[reportUnusedFunction]
        conn.info.setdefault(_OPEN_CURSORS, weakref.WeakSet()).add(cursor)

    @event.listens_for(engine, "reset")
    def _returned(_dbapi_conn: Any, record: Any, _state: Any) -> None:  # pyright: ignore[reportUnusedFunction]
        _close_left_open(record.info)

    return engine


def _close_left_open(info: dict[Any, Any]) -> None:
    """Close the cursors of a SQLite connection's checkout that are still open (a result not
    read to its end): done as the connection goes back to the pool.

    A query still open keeps its read transaction, so the connection keeps seeing the
    database as it was then (in WAL mode). Whoever takes that connection from the pool next
    and writes after another connection committed is refused at once with "database is
    locked" (SQLite's SQLITE_BUSY_SNAPSHOT, which no busy timeout waits out: the snapshot
    can never become current). A result read after its connection went back fails."""
    cursors: weakref.WeakSet[Any] | None = info.get(_OPEN_CURSORS)
    if cursors:
        for cursor in list(cursors):
            cursor.close()
        cursors.clear()


def create_tables(engine: sa.Engine, metadata: sa.MetaData) -> None:
    """`metadata`'s tables, when missing. Two processes creating them at once can collide (in
    PostgreSQL's catalog; on SQLite as "table … already exists" after both checked): the loser
    tries again once the winner committed."""
    for attempt in range(5):
        try:
            metadata.create_all(engine, checkfirst=True)
            return
        except (IntegrityError, ProgrammingError, OperationalError) as exc:
            lost_race = not isinstance(exc, OperationalError) or "already exists" in str(exc)
            if attempt == 4 or not lost_race:
                raise


def _take(conn: sa.Connection, session_id: str) -> str:
    """Write a fresh writer token for `session_id` (replacing any other writer's); returns it."""
    token = secrets.token_hex(16)
    done = conn.execute(
        sa.update(WRITERS).where(WRITERS.c.session_id == session_id).values(token=token)
    )
    if done.rowcount == 0:
        conn.execute(sa.insert(WRITERS).values(session_id=session_id, token=token))
    return token


class DbSessionStore(SessionStore):
    """Sessions as rows of a database (see the module doc): the `SessionStore` interface, the
    same entry format, header and loader rules as the JSONL files.

    Attributes:
        url: the database URL.
        root: the local folder of the sessions' artifact folders (`<root>/<id>/`).
    """

    def __init__(
        self,
        url: str,
        root: Path | None = None,
        *,
        clock_ms: Callable[[], int] = wall_clock_ms,
        id_factory: Callable[[], str] = new_id,
    ) -> None:
        """Open the store on `url` (tables created when missing; `root`: as `SessionStore`).

        Raises:
            sqlalchemy.exc.SQLAlchemyError: the database cannot be reached or set up.
        """
        super().__init__(root, clock_ms=clock_ms, id_factory=id_factory, migrate=False)
        self.url = url
        self.engine = open_engine(url, wal=True)
        with _ENGINES_LOCK:
            if url not in _READY:
                create_tables(self.engine, METADATA)
                _READY.add(url)

    def path(self, session_id: str) -> Path:
        """`jobs-database/<id>`: the name reports give the session (no such file exists)."""
        return Path(LABEL) / validate_session_id(session_id)

    def exists(self, session_id: str) -> bool:
        """True when the session's header row exists. Raises SessionError on a bad id."""
        sid = validate_session_id(session_id)
        with self.engine.connect() as c:
            found = c.execute(
                sa.select(ENTRIES.c.seq).where(ENTRIES.c.session_id == sid, ENTRIES.c.seq == 0)
            ).first()
        return found is not None

    def create(
        self,
        session_id: str | None = None,
        *,
        cwd: str,
        parent: tuple[str, str] | None = None,
        caller: tuple[str, str, tuple[str, ...]] | None = None,
    ) -> SessionWriter:
        """As `SessionStore.create`: the header row is inserted and this writer holds the
        session. Raises SessionError when the session exists."""
        sid = validate_session_id(self._id_factory() if session_id is None else session_id)
        header = self._header(sid, cwd=cwd, parent=parent, caller=caller)
        line = json.dumps(header, ensure_ascii=False, separators=(",", ":")).encode()
        try:
            with self.engine.begin() as c:
                c.execute(
                    sa.insert(ENTRIES).values(
                        session_id=sid, seq=0, line=line, written_ms=self._clock_ms()
                    )
                )
                token = _take(c, sid)
        except IntegrityError:
            raise SessionError(f"session {sid} already exists in the jobs database") from None
        return self._writer(sid, token, 0, None if parent is None else parent[1])

    def open_for_append(self, session_id: str) -> SessionWriter:
        """As `SessionStore.open_for_append`: this writer takes the session over (another
        writer's next append raises SessionBusyError).

        Raises:
            SessionNotFoundError: no such session.
            SessionError: a bad id, or the header row is not a tether session header.
        """
        sid = validate_session_id(session_id)
        path = self.path(sid)
        with self.engine.begin() as c:
            head = c.execute(
                sa.select(ENTRIES.c.line).where(ENTRIES.c.session_id == sid, ENTRIES.c.seq == 0)
            ).scalar()
            if head is None:
                raise SessionNotFoundError(f"no session {sid} in the jobs database")
            token = _take(c, sid)
            last_seq, last_id = 0, None
            with c.execute(  # closed at the loop's break (see `_close_left_open`)
                sa.select(ENTRIES.c.seq, ENTRIES.c.line)
                .where(ENTRIES.c.session_id == sid, ENTRIES.c.seq > 0)
                .order_by(ENTRIES.c.seq.desc())
            ) as rows:
                for seq, raw in rows:
                    last_seq = max(last_seq, int(seq))
                    entries, _ = parse_line(bytes(raw), path, int(seq) + 1)
                    if entries:
                        last_id = entries[-1].id
                        break
        try:
            header = parse_header(bytes(head), path)
        except SessionError:
            header = scan_bytes(self._read_bytes(sid, path), path).header  # salvaged, or raises
        return self._writer(sid, token, last_seq, last_id or header.parent_entry)

    def take_over(self, session_id: str) -> None:
        """Make every writer of `session_id` open now stale (their next append raises
        SessionBusyError), without opening one: what a worker does before it loads a session
        it recovers, so a writer it replaces cannot add entries after the load."""
        sid = validate_session_id(session_id)
        with self.engine.begin() as c:
            _take(c, sid)

    def _writer(self, sid: str, token: str, seq: int, last: str | None) -> DbSessionWriter:
        return DbSessionWriter(
            self,
            session_id=sid,
            path=self.path(sid),
            artifacts=self.session_dir(sid),
            token=token,
            seq=seq,
            last_entry_id=last,
            clock_ms=self._clock_ms,
            id_factory=self._id_factory,
        )

    def _read_bytes(self, session_id: str, path: Path) -> bytes:
        with self.engine.connect() as c:
            lines = [
                bytes(r)
                for r in c.execute(
                    sa.select(ENTRIES.c.line)
                    .where(ENTRIES.c.session_id == session_id)
                    .order_by(ENTRIES.c.seq)
                ).scalars()
            ]
        if not lines:
            raise FileNotFoundError(path)
        return b"\n".join(lines) + b"\n"

    def list(self) -> list[SessionInfo]:
        """Every session in the database, most recently written first (as
        `SessionStore.list`; `modified_ms` is its last entry's write time)."""
        with self.engine.connect() as c:
            rows = c.execute(
                sa.select(ENTRIES.c.session_id, ENTRIES.c.line, ENTRIES.c.written_ms).order_by(
                    ENTRIES.c.session_id, ENTRIES.c.seq
                )
            ).all()
        grouped: dict[str, tuple[list[bytes], int]] = {}
        for sid, line, ms in rows:
            lines, last = grouped.get(sid, ([], 0))
            lines.append(bytes(line))
            grouped[sid] = (lines, max(last, int(ms)))
        infos = [
            summarize(sid, self.path(sid), b"\n".join(lines) + b"\n", ms)
            for sid, (lines, ms) in grouped.items()
        ]
        infos.sort(key=lambda i: (i.modified_ms, i.id), reverse=True)
        return infos

    def delete(self, session_id: str, *, keep_forks: bool = True) -> DeleteReport:
        """Remove the session's rows and its local artifact folder. Unlike the file store it
        copies nothing into forks (`keep_forks` is accepted and ignored): no command deletes a
        Job's session.

        Returns:
            A `DeleteReport`: the artifact folder (if there was one) removed; a folder entry
            that could not be removed is in its `errors`, the rows are gone all the same.

        Raises:
            SessionError: invalid id.
            SessionNotFoundError: neither rows nor a folder exist.
        """
        sid = validate_session_id(session_id)
        with self.engine.begin() as c:
            gone = c.execute(sa.delete(ENTRIES).where(ENTRIES.c.session_id == sid)).rowcount
            c.execute(sa.delete(WRITERS).where(WRITERS.c.session_id == sid))
        folder = self.session_dir(sid)
        if not gone and not (folder.exists() or folder.is_symlink()):
            raise SessionNotFoundError(f"no session {sid} in the jobs database")
        return remove_all([folder])


class DbSessionWriter(SessionWriter):
    """Appends entries as rows (see the module doc); built by `DbSessionStore`. The encoding
    of each entry is `SessionWriter`'s.

    Attributes:
        store: the store it writes to (a subagent's session goes to the same one).
    """

    __slots__ = ("_artifacts", "_engine", "_seq", "_token", "store")

    def __init__(
        self,
        store: DbSessionStore,
        *,
        session_id: str,
        path: Path,
        artifacts: Path,
        token: str,
        seq: int,
        last_entry_id: str | None,
        clock_ms: Callable[[], int],
        id_factory: Callable[[], str],
    ) -> None:
        super().__init__(
            -1,  # no descriptor: `_write`, `close` and `__del__` below never use it
            session_id=session_id,
            path=path,
            last_entry_id=last_entry_id,
            clock_ms=clock_ms,
            id_factory=id_factory,
        )
        self.store = store
        self._engine = store.engine
        self._artifacts = artifacts
        self._token = token
        self._seq = seq

    @property
    def session_dir(self) -> Path:
        """The session's local artifact folder (not created)."""
        return self._artifacts

    def _write(self, data: bytes, entry_id: str, entry_json: bytes) -> None:
        if self._fd is None:
            raise SessionError(f"session {self._id} writer is closed")
        seq = self._seq + 1
        try:
            with self._engine.begin() as c:
                held = c.execute(
                    sa.update(WRITERS)
                    .where(WRITERS.c.session_id == self._id, WRITERS.c.token == self._token)
                    .values(token=self._token)
                ).rowcount
                if held != 1:
                    raise SessionBusyError(
                        f"session {self._id} was taken over by another writer"
                    )
                c.execute(
                    sa.insert(ENTRIES).values(
                        session_id=self._id,
                        seq=seq,
                        line=data.rstrip(b"\n"),
                        written_ms=self._clock_ms(),
                    )
                )
        except IntegrityError:
            raise SessionBusyError(f"session {self._id} is being written by another writer") from None
        self._seq = seq
        self._last = entry_id
        self._last_json = entry_json

    def sync(self) -> None:
        """Make the entries written so far survive a power loss, as `SessionWriter.sync` does
        for a file: the tool outputs and images saved in the artifact folder, then, on SQLite, a WAL
        checkpoint (the WAL fsynced, its frames written back; PostgreSQL commits are durable
        already).

        Raises:
            SessionError: the writer is closed.
            sqlalchemy.exc.SQLAlchemyError: the database failed.
        """
        if self._fd is None:
            raise SessionError(f"session {self._id} writer is closed")
        for folder in SYNCED_FOLDERS:
            self._sync_outputs(folder)
        if self._engine.dialect.name == "sqlite":
            with self._engine.connect() as c:
                c.exec_driver_sql("PRAGMA wal_checkpoint(PASSIVE)")

    def close(self) -> None:
        """Stop writing (idempotent); the writer row stays until another writer replaces it."""
        self._fd = None

    def __del__(self) -> None:
        return None

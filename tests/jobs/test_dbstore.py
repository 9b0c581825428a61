"""The jobs database's session store (`tether.session.dbstore`) on SQLite and on a real
PostgreSQL: the same sessions as the JSONL files for the same writes (turns, events, forks,
damaged lines salvaged by the same rules), and one writer at a time across processes."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
import sqlalchemy as sa
import sqlalchemy.event as sa_event
import sqlalchemy.exc as sa_exc
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tether.errors import SessionBusyError, SessionError, SessionNotFoundError
from tether.messages import Role, TextBlock, Turn
from tether.session import SessionStore
from tether.session.dbstore import ENTRIES, DbSessionStore


@pytest.fixture(params=["sqlite", "postgres"])
def url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "postgres":
        return str(request.getfixturevalue("postgres_url"))
    return f"sqlite:///{tmp_path / 'jobs.sqlite'}"


def _stores(tmp: Path, url: str) -> tuple[SessionStore, DbSessionStore]:
    n = iter(range(10**6))

    def ids() -> str:
        return f"e{next(n)}"

    def clock() -> int:
        return 1_000

    files = SessionStore(tmp / "files", clock_ms=clock, id_factory=ids)
    n2 = iter(range(10**6))
    db = DbSessionStore(url, tmp / "db", clock_ms=clock, id_factory=lambda: f"e{next(n2)}")
    return files, db


def _turn(i: int, role: Role = "user") -> Turn:
    return Turn(id=f"t{i}", role=role, content=(TextBlock(text=f"hello {i} \u00e9\n\"q\""),))


def _view(store: SessionStore, sid: str) -> tuple[object, ...]:
    loaded = store.load(sid)
    return (
        [(t.id, t.role, t.text) for t in loaded.turns],
        [(e.id, e.kind, dict(e.data)) for e in loaded.events],
        [(s.line, s.reason) for s in loaded.report.skipped],
        loaded.header.parent,
    )


def test_same_session_as_the_files_and_forks_and_listing(tmp_path: Path, url: str) -> None:
    files, db = _stores(tmp_path, url)
    for store in (files, db):
        with store.create("job.a", cwd="/w") as w:
            w.append(_turn(1))
            w.append_event("note", {"k": [1, "x"]})
            w.append(_turn(2, "assistant"))
        with store.open_for_append("job.a") as w:
            assert w.last_entry_id == "t2"
            w.append(_turn(3))
        with store.create("job.b", cwd="/w", parent=("job.a", "t2")) as w:
            w.append(_turn(4))
    for sid in ("job.a", "job.b"):
        assert _view(db, sid) == _view(files, sid)
    assert [t.id for t in db.load("job.b").turns] == ["t1", "t2", "t4"]
    assert {i.id for i in db.list()} == {"job.a", "job.b"}
    assert db.exists("job.a") and not db.exists("job.c")
    with pytest.raises(SessionError, match="already exists"):
        db.create("job.a", cwd="/w")
    with pytest.raises(SessionNotFoundError):
        db.load("job.c")
    with pytest.raises(SessionNotFoundError):
        db.open_for_append("job.c")
    db.delete("job.b")
    assert not db.exists("job.b")


def test_a_writer_taken_over_adds_nothing(tmp_path: Path, url: str) -> None:
    _, db = _stores(tmp_path, url)
    old = db.create("job.a", cwd="/w")
    old.append(_turn(1))
    other = DbSessionStore(url, tmp_path / "db")  # another worker's store on the same database
    other.take_over("job.a")
    with pytest.raises(SessionBusyError, match="taken over"):
        old.append(_turn(2, "assistant"))
    new = other.open_for_append("job.a")
    assert new.last_entry_id == "t1"
    new.append(_turn(3, "assistant"))
    with pytest.raises(SessionBusyError):
        old.append_event("late", {})
    assert [t.id for t in db.load("job.a").turns] == ["t1", "t3"]



def _tagged(kind: str) -> Callable[[object], tuple[str, object]]:
    """A line of `kind` holding the drawn value."""
    return lambda value: (kind, value)


LINES = st.lists(
    st.one_of(
        st.builds(_tagged("turn"), st.integers(0, 5)),
        st.builds(_tagged("event"), st.sampled_from(["a", "b\u00e9"])),
        st.builds(
            _tagged("raw"),
            st.sampled_from(
                [b"", b"not json", b'{"type":"event"', b"\xff\xfe", b'{"type":"turn","id":"z"}']
            ),
        ),
    ),
    max_size=12,
)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(lines=LINES)
def test_damaged_lines_load_by_the_file_rules(tmp_path_factory: pytest.TempPathFactory, lines: list[tuple[str, object]]) -> None:
    """Entries and damaged lines written in the same order load the same from a file and from
    the database (rows joined by newlines are the file's bytes): skipped lines, salvage,
    duplicate ids."""
    tmp = tmp_path_factory.mktemp("s")
    files, db = _stores(tmp, f"sqlite:///{tmp / 'jobs.sqlite'}")
    fw, dw = files.create("job.p", cwd="/"), db.create("job.p", cwd="/")
    seq = 0
    for kind, value in lines:
        if kind == "turn":
            fw.append(_turn(int(str(value))))
            dw.append(_turn(int(str(value))))
            seq += 1
        elif kind == "event":
            fw.append_event(str(value), {"v": 1}, event_id=f"ev{seq}")
            dw.append_event(str(value), {"v": 1}, event_id=f"ev{seq}")
            seq += 1
        else:
            raw = value if isinstance(value, bytes) else b""
            with open(files.path("job.p"), "ab") as f:
                f.write(raw + b"\n")
            seq += 1
            with db.engine.begin() as c:  # a damaged row, as a torn or edited file line
                last = c.execute(sa.select(sa.func.max(ENTRIES.c.seq))).scalar() or 0
                c.execute(
                    sa.insert(ENTRIES).values(
                        session_id="job.p", seq=int(last) + 1, line=raw, written_ms=0
                    )
                )
            dw = db.open_for_append("job.p")
    fw.close()
    dw.close()
    assert _view(db, "job.p") == _view(files, "job.p")


def test_sync_makes_the_entries_durable_on_sqlite(tmp_path: Path) -> None:
    """On SQLite the store's file is in WAL mode without an fsync per commit; `sync()` (what
    a run calls before the engine records it done) checkpoints: the rows reach the main file."""
    url = f"sqlite:///{tmp_path / 'jobs.sessions.sqlite'}"
    store = DbSessionStore(url, tmp_path / "db")
    w = store.create("job.d", cwd="/w")
    w.append_event("marker", {"text": "durable-" * 4})
    main = tmp_path / "jobs.sessions.sqlite"
    assert b"durable-durable-" not in main.read_bytes()  # still only in the WAL
    w.sync()
    assert b"durable-durable-" in main.read_bytes()
    w.close()


def test_a_jobs_runs_subagent_session_goes_to_the_same_database(
    tmp_path: Path, url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tether.jobs.runner import run_task
    from tether.messages import TextBlock as Text
    from tether.providers.base import ModelRequest
    from tether.testing import Response, ScriptedProvider, call

    def first_user(request: ModelRequest) -> str:
        user = next(t for t in request.messages if t.role == "user")
        return "".join(b.text for b in user.content if isinstance(b, Text))

    plan: dict[str, list[Response]] = {
        "delegate": [call("task", id="c1", name="look", prompt="count"), "done"],
        "count": ["3"],
    }

    def respond(request: ModelRequest) -> Response:
        step = sum(1 for t in request.messages if t.role == "assistant")
        return plan[first_user(request)][step]

    monkeypatch.chdir(tmp_path)
    root = tmp_path / "proj"
    root.mkdir()
    store = DbSessionStore(url, tmp_path / "db")
    task = {"id": "t", "prompt": "delegate", "file": "t.md", "digest": "x"}
    outcome = run_task(root, task, "once", project="p", model=ScriptedProvider(respond), store=store)
    assert outcome["stop_reason"] == "end_turn" and outcome["answer"] == "done"
    children = [i for i in store.list() if i.caller == outcome["session_id"]]
    assert len(children) == 1
    assert [t.text for t in store.load(children[0].id).turns] == ["count", "3"]
    assert not (tmp_path / "jobs-database").exists()  # no session files under the label


def test_a_lost_table_creation_race_on_sqlite_is_tried_again(tmp_path: Path) -> None:
    """Seen in CI: a worker and `dispatch --watch` both checked, both created, and the loser
    raised SQLite's "table tether_jobs_workers already exists"."""
    import sqlalchemy as sa
    from sqlalchemy.exc import OperationalError

    from tether.session.dbstore import create_tables

    engine = sa.create_engine(f"sqlite:///{tmp_path / 'race.sqlite'}")
    metadata = sa.MetaData()
    sa.Table("t", metadata, sa.Column("x", sa.Integer, primary_key=True))
    calls: list[int] = []
    real = metadata.create_all

    def racing(bind: sa.Engine, checkfirst: bool = True) -> None:
        calls.append(1)
        if len(calls) == 1:  # the other process won between our check and our CREATE
            real(bind, checkfirst=checkfirst)
            raise OperationalError("CREATE TABLE t", {}, Exception("table t already exists"))
        real(bind, checkfirst=checkfirst)

    metadata.create_all = racing  # type: ignore[method-assign]
    create_tables(engine, metadata)
    assert len(calls) == 2 and sa.inspect(engine).has_table("t")
    metadata.create_all = lambda bind, checkfirst=True: (_ for _ in ()).throw(  # type: ignore[method-assign]
        OperationalError("CREATE TABLE t", {}, Exception("disk I/O error"))
    )
    with pytest.raises(OperationalError, match="disk I/O"):
        create_tables(engine, metadata)  # another database error is not a race


def test_a_connection_goes_back_to_the_pool_with_no_query_open_on_sqlite(tmp_path: Path) -> None:
    """Seen in the Jobs durability test: a resumed run's first append failed at once with
    "database is locked", and its workflow ended in ERROR. `open_for_append` had left its query
    of the last entries open as its connection went back to the pool: that connection kept
    seeing the database as it was then (WAL mode), so a writer it was handed to next, after
    another connection had committed, was refused at once (SQLITE_BUSY_SNAPSHOT, which no busy
    timeout waits out). Each connection is probed as it comes back to the pool: another
    connection commits, then the returned one must be able to start a write."""
    import sqlite3

    path = tmp_path / "jobs.sessions.sqlite"
    store = DbSessionStore(f"sqlite:///{path}", tmp_path / "db")
    with store.create("job.a", cwd="/w") as w:
        for i in range(4):
            w.append(_turn(i))
    other = sqlite3.connect(path, timeout=30, isolation_level=None)
    other.execute("CREATE TABLE probe (x INTEGER)")
    refused: list[str] = []

    def probe(dbapi_conn: sqlite3.Connection, _record: object) -> None:
        other.execute("INSERT INTO probe VALUES (1)")
        try:
            dbapi_conn.execute("BEGIN IMMEDIATE")
            dbapi_conn.execute("ROLLBACK")
        except sqlite3.OperationalError as exc:
            refused.append(str(exc))

    sa_event.listen(store.engine, "checkin", probe)
    try:
        with store.open_for_append("job.a") as w:  # reads the last entries, newest first
            assert w.last_entry_id == "t3"
            w.append(_turn(4, "assistant"))
        store.take_over("job.a")
        assert store.exists("job.a") and len(store.load("job.a").turns) == 5
        assert [i.id for i in store.list()] == ["job.a"]
        assert refused == []
        # any query left unread is closed as its connection goes back (reading it then fails)
        with store.engine.connect() as c:
            rows = c.execute(sa.select(ENTRIES.c.line))
            assert rows.fetchone() is not None
        assert refused == []
        with pytest.raises(sa_exc.ProgrammingError, match="closed cursor"):
            rows.fetchone()
    finally:
        sa_event.remove(store.engine, "checkin", probe)
        other.close()

"""Tether's own tables in the jobs database (beside DBOS's): the workers and the dispatch
cycles. The sessions' tables are `tether.session.dbstore`'s.

    tether_jobs_workers(executor_id, project, host, pid, token, state, started_ms,
                        heartbeat_ms, recovered_by, recover_ms)
    tether_jobs_cycles(id, project, executor_id, at_ms, tasks, rejected, due, enqueued)

Times are Unix milliseconds by the database's clock (`now_ms`), never a worker's, so workers
on machines whose clocks disagree judge liveness alike.
"""

from __future__ import annotations

import threading
from typing import Any

import sqlalchemy as sa
from sqlalchemy import event
from sqlalchemy.exc import SQLAlchemyError

from tether.session.dbstore import create_tables, open_engine

METADATA = sa.MetaData()
WORKERS = sa.Table(
    "tether_jobs_workers",
    METADATA,
    sa.Column("executor_id", sa.String(255), primary_key=True),
    sa.Column("project", sa.String(255), nullable=False),
    sa.Column("host", sa.String(255), nullable=False),
    sa.Column("pid", sa.Integer, nullable=False),
    sa.Column("token", sa.String(64), nullable=False),
    sa.Column("state", sa.String(16), nullable=False),  # alive | stopped | dead | recovered
    sa.Column("started_ms", sa.BigInteger, nullable=False),
    sa.Column("heartbeat_ms", sa.BigInteger, nullable=True),
    sa.Column("recovered_by", sa.String(255), nullable=True),
    sa.Column("recover_ms", sa.BigInteger, nullable=True),
)
CYCLES = sa.Table(
    "tether_jobs_cycles",
    METADATA,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("project", sa.String(255), nullable=False, index=True),
    sa.Column("executor_id", sa.String(255), nullable=False),
    sa.Column("at_ms", sa.BigInteger, nullable=False),
    sa.Column("tasks", sa.Integer, nullable=False),
    sa.Column("rejected", sa.Integer, nullable=False),
    sa.Column("due", sa.Integer, nullable=False),
    sa.Column("enqueued", sa.Integer, nullable=False),
)

_READY: set[str] = set()
_LOCK = threading.Lock()


def engine(url: str) -> sa.Engine:
    """The process's engine on the jobs database `url`, its tether tables created when
    missing (once per process).

    Raises:
        sqlalchemy.exc.SQLAlchemyError: the database cannot be reached or set up.
    """
    eng = open_engine(url)
    with _LOCK:
        if url not in _READY:
            create_tables(eng, METADATA)
            _READY.add(url)
    return eng


def prefer_wal(url: str) -> None:
    """Put an embedded SQLite jobs database in WAL mode (persistent, for every process that
    opens it): a commit then costs one fsync instead of the rollback journal's several, and
    none on DBOS's own engine (`system_engine`). Does nothing for another database, or when
    the file is busy (it stays as it is)."""
    if not url.startswith("sqlite:"):
        return
    try:
        with engine(url).connect() as c:
            c.exec_driver_sql("PRAGMA journal_mode=WAL")
    except SQLAlchemyError:
        return


def system_engine(url: str) -> sa.Engine | None:
    """DBOS's engine on an embedded SQLite jobs database (`None` for another database: DBOS
    builds its own). Set up as DBOS sets up its own (`BEGIN IMMEDIATE`, a 30 s busy timeout,
    foreign keys on, a pool of 20 without overflow), but without a ping per checkout (a file
    has no connection to lose) and, when the file is in WAL mode (`prefer_wal`), with
    `synchronous=NORMAL`: a commit is then written to the WAL without an fsync.

    Durability, judged: a commit survives a killed process (kill -9, the crash the recovery
    tests make) at once, as before; only a power loss or an OS crash can lose the last commits
    (SQLite: "a transaction committed in WAL mode with synchronous=NORMAL might roll back
    following a power loss or system crash"; the database stays consistent). What such a
    loss rolls back is repaired by what exists already: an enqueue is enqueued again by the
    next dispatch (the task file is still there; a scheduled run while its slot is the
    latest, as after the machine was off); a dequeue, a step record or a workflow's end
    runs the step again, and the run, whose session was made durable before its step returned
    (`DbSessionWriter.sync`), returns its recorded outcome without another request. Saved:
    an fsync per commit, four commits per run (the dequeue, the step record, the archive's
    record before it was folded in, the workflow's end), about 3 ms each on an idle disk.
    A new engine per call: DBOS disposes of it when destroyed.
    """
    if not url.startswith("sqlite:"):
        return None
    eng = sa.create_engine(url, pool_size=20, max_overflow=0, pool_timeout=30)

    @event.listens_for(eng, "connect")
    def _setup(dbapi_conn: Any, _record: Any) -> None:  # pyright: ignore[reportUnusedFunction]
        dbapi_conn.isolation_level = "IMMEDIATE"
        dbapi_conn.execute("PRAGMA busy_timeout=30000")
        dbapi_conn.execute("PRAGMA foreign_keys=ON")
        mode = dbapi_conn.execute("PRAGMA journal_mode").fetchone()
        if mode is not None and str(mode[0]).lower() == "wal":
            dbapi_conn.execute("PRAGMA synchronous=NORMAL")

    return eng


def now_ms(eng: sa.Engine) -> sa.ColumnElement[int]:
    """The database's clock in integer Unix milliseconds, as an SQL expression."""
    if eng.dialect.name == "sqlite":
        return sa.literal_column("CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER)")
    return sa.literal_column("CAST(EXTRACT(EPOCH FROM clock_timestamp()) * 1000 AS BIGINT)")


def record_cycle(
    url: str, *, project: str, executor_id: str, tasks: int, rejected: int, due: int, enqueued: int
) -> None:
    """One dispatch scan's record: the valid and rejected task files it read, the runs due now
    and how many of them it enqueued (the others existed already)."""
    eng = engine(url)
    with eng.begin() as c:
        c.execute(
            sa.insert(CYCLES).values(
                project=project,
                executor_id=executor_id,
                at_ms=now_ms(eng),
                tasks=tasks,
                rejected=rejected,
                due=due,
                enqueued=enqueued,
            )
        )


def cycles(url: str, project: str, limit: int = 100) -> list[dict[str, int | str]]:
    """The project's last `limit` dispatch scans, oldest first."""
    eng = engine(url)
    with eng.connect() as c:
        rows = c.execute(
            sa.select(CYCLES)
            .where(CYCLES.c.project == project)
            .order_by(CYCLES.c.id.desc())
            .limit(limit)
        ).all()
    return [
        {
            "at_ms": int(r.at_ms),
            "executor_id": str(r.executor_id),
            "tasks": int(r.tasks),
            "rejected": int(r.rejected),
            "due": int(r.due),
            "enqueued": int(r.enqueued),
        }
        for r in reversed(rows)
    ]

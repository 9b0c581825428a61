"""Which workers are alive, judged in the jobs database by its clock, and who recovers the runs
of one that died.

Every process that runs task runs (`worker`, `dispatch` without `--enqueue-only`, `run`)
registers its executor id in `tether_jobs_workers` before DBOS starts, then beats every
`beat_s` seconds (`min(5 s, worker_timeout / 3)`). Rules, each one SQL statement:

- register: refused (`WorkerAlive`) while a row with the id is `alive` and beat within
  `worker_timeout`, unless it is on this host and its pid is gone (a process restarted after
  a crash takes its id back at once); otherwise the row is taken with a fresh token.
- beat: `heartbeat_ms = now` where the id still has this process's token and is `alive`. No
  row matched: the process was declared dead (a pause longer than the timeout) and its runs
  were handed to others: it must stop at once (`on_dead`), so nothing runs twice.
- claim: one `UPDATE … RETURNING` turns every other row that is `alive` but silent past the
  timeout, `stopped`, or `dead` with a recovery claim older than the timeout (its claimer died
  too) into `dead`, `recovered_by` this process. Row locks (PostgreSQL) or the database lock
  (SQLite) make exactly one concurrent claimer win each row.
- recover: for each claimed id, DBOS's recovery for executor ids
  (`DBOS._recover_pending_workflows`, what DBOS's admin recovery endpoint calls) puts its
  PENDING workflows back on their queues, where any live worker dequeues each exactly once
  (DBOS's dequeue is atomic, and a stale executor's writes are fenced by DBOS's ownership
  token); then the row becomes `recovered`.

A dead worker's runs are thus running again within `worker_timeout` + one beat + one queue
poll.
"""

from __future__ import annotations

import os
import secrets
import socket
import sys
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import sqlalchemy as sa
from sqlalchemy.exc import IntegrityError

from tether.errors import WorkerAlive
from tether.jobs.db import WORKERS, engine, now_ms


def beat_interval(timeout_s: float) -> float:
    """Seconds between two beats (and claims) for `worker_timeout` `timeout_s`."""
    return max(0.05, min(5.0, timeout_s / 3))


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _exit_dead(executor_id: str) -> None:
    print(
        f"tether jobs: worker {executor_id} was declared dead by the others (no heartbeat "
        "within jobs.worker_timeout); its runs were recovered elsewhere: exiting",
        file=sys.stderr,
        flush=True,
    )
    os._exit(1)


@dataclass
class Liveness:
    """One process's registration, heartbeat and recovery duty.

    Attributes:
        url: the jobs database.
        executor_id: this process's DBOS executor id.
        project: the project it serves (shown by `tether jobs workers`).
        timeout_s: `jobs.worker_timeout`.
        recover: called with a dead executor id; puts its runs back on the queues, returns how
            many (default: DBOS's recovery, in a launched process).
        on_dead: called when this process learns it was declared dead (default: one line on
            stderr and `os._exit(1)`).
        busy: True while this process runs a task run (a clean stop then leaves the row to
            time out instead of marking it `stopped`).
        claims: take part in recovering dead workers (long-lived processes: `worker`,
            `dispatch --watch`); a short-lived one (`dispatch --once`, `run`) only beats.
    """

    url: str
    executor_id: str
    project: str
    timeout_s: float
    recover: Callable[[str], int] | None = None
    on_dead: Callable[[str], None] = _exit_dead
    busy: Callable[[], bool] = lambda: False
    claims: bool = True
    token: str = field(default_factory=lambda: secrets.token_hex(16))
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None

    @property
    def _timeout_ms(self) -> int:
        return int(self.timeout_s * 1000)

    def register(self) -> None:
        """Take the executor id (see the module rules).

        Raises:
            WorkerAlive: a live worker has the id.
            sqlalchemy.exc.SQLAlchemyError: the database cannot be reached.
        """
        eng = engine(self.url)
        now = now_ms(eng)
        host, pid = socket.gethostname(), os.getpid()
        for _ in range(5):
            try:
                with eng.begin() as c:
                    at = int(c.execute(sa.select(now)).scalar_one())
                    row = c.execute(
                        sa.select(WORKERS)
                        .where(WORKERS.c.executor_id == self.executor_id)
                        .with_for_update()
                    ).first()
                    if row is not None:
                        self._check_free(row, at, host)
                    values: dict[str, Any] = {
                        "project": self.project,
                        "host": host,
                        "pid": pid,
                        "token": self.token,
                        "state": "alive",
                        "started_ms": now,
                        "heartbeat_ms": now,
                        "recovered_by": None,
                        "recover_ms": None,
                    }
                    if row is None:
                        c.execute(sa.insert(WORKERS).values(executor_id=self.executor_id, **values))
                    else:
                        c.execute(
                            sa.update(WORKERS)
                            .where(WORKERS.c.executor_id == self.executor_id)
                            .values(**values)
                        )
                return
            except IntegrityError:  # registered by another process at the same instant
                continue
        raise WorkerAlive(f"worker id {self.executor_id} is being registered by another process")

    def _check_free(self, row: sa.Row[Any], at: int, host: str) -> None:
        hb = row.heartbeat_ms
        if row.state != "alive" or hb is None or at - int(hb) > self._timeout_ms:
            return
        if row.host == host and not _pid_alive(int(row.pid)):
            return  # crashed on this host: its id is free at once
        raise WorkerAlive(
            f"worker id {self.executor_id} is alive: pid {row.pid} on {row.host} beat "
            f"{(at - int(hb)) / 1000:.1f}s ago (jobs.worker_timeout {self.timeout_s:g}s); "
            "give this one another --id"
        )

    def beat(self) -> bool:
        """Record a heartbeat. False: this process was declared dead (its row was taken)."""
        eng = engine(self.url)
        with eng.begin() as c:
            done = c.execute(
                sa.update(WORKERS)
                .where(
                    WORKERS.c.executor_id == self.executor_id,
                    WORKERS.c.token == self.token,
                    WORKERS.c.state == "alive",
                )
                .values(heartbeat_ms=now_ms(eng))
            )
        return done.rowcount == 1

    def claim(self) -> list[str]:
        """Mark the dead workers as being recovered by this one; returns their ids (see the
        module rules: a row is claimed by one process only)."""
        eng = engine(self.url)
        now = now_ms(eng)
        stale = sa.or_(
            sa.and_(
                WORKERS.c.state == "alive",
                sa.or_(
                    WORKERS.c.heartbeat_ms.is_(None),
                    WORKERS.c.heartbeat_ms < now - self._timeout_ms,
                ),
            ),
            WORKERS.c.state == "stopped",
            sa.and_(WORKERS.c.state == "dead", WORKERS.c.recover_ms < now - self._timeout_ms),
        )
        with eng.begin() as c:
            rows = c.execute(
                sa.update(WORKERS)
                .where(WORKERS.c.executor_id != self.executor_id, stale)
                .values(state="dead", recovered_by=self.executor_id, recover_ms=now)
                .returning(WORKERS.c.executor_id)
            )
            return [str(x) for x in rows.scalars().all()]

    def recovered(self, executor_id: str) -> None:
        """Mark `executor_id`'s recovery (claimed by this process) as done."""
        eng = engine(self.url)
        with eng.begin() as c:
            c.execute(
                sa.update(WORKERS)
                .where(
                    WORKERS.c.executor_id == executor_id,
                    WORKERS.c.recovered_by == self.executor_id,
                    WORKERS.c.state == "dead",
                )
                .values(state="recovered")
            )

    def tick(self) -> list[str]:
        """One beat, then one claim and the recovery of what it claimed. Returns the ids
        recovered. Calls `on_dead` (and returns []) when this process was declared dead."""
        if not self.beat():
            self.on_dead(self.executor_id)
            return []
        done: list[str] = []
        for dead in self.claim() if self.claims else ():
            if self.recover is not None:
                self.recover(dead)
            self.recovered(dead)
            done.append(dead)
        return done

    def start(self) -> None:
        """Beat and claim in a daemon thread until `stop` (a failed tick, such as a database
        that is briefly unreachable, is tried again at the next one)."""
        interval = beat_interval(self.timeout_s)

        def loop() -> None:
            while not self._stop.wait(interval):
                try:
                    self.tick()
                except Exception as exc:  # the database is unreachable now: beat again later
                    print(f"tether jobs: heartbeat failed: {exc}", file=sys.stderr, flush=True)

        self._thread = threading.Thread(target=loop, name="tether-jobs-heartbeat", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        """Stop beating. A process with no run in progress marks its row `stopped` (a live
        worker then recovers nothing of it at once); one cut mid-run leaves the row to time
        out, so its runs are recovered after `worker_timeout`."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=10)
        if self.busy():
            return
        eng = engine(self.url)
        with eng.begin() as c:
            c.execute(
                sa.update(WORKERS)
                .where(WORKERS.c.executor_id == self.executor_id, WORKERS.c.token == self.token)
                .values(state="stopped", heartbeat_ms=None)
            )


def workers(url: str, timeout_s: float) -> tuple[int, list[dict[str, Any]]]:
    """Every registered worker, by executor id: `(database now, rows)`, each row with
    `age_s` (seconds since its last heartbeat, None after a clean stop) and `alive`."""
    eng = engine(url)
    with eng.connect() as c:
        at = int(c.execute(sa.select(now_ms(eng))).scalar_one())
        rows = c.execute(sa.select(WORKERS).order_by(WORKERS.c.executor_id)).all()
    out: list[dict[str, Any]] = []
    for r in rows:
        age = None if r.heartbeat_ms is None else (at - int(r.heartbeat_ms)) / 1000
        out.append(
            {
                "executor_id": r.executor_id,
                "project": r.project,
                "host": r.host,
                "pid": r.pid,
                "state": r.state,
                "alive": r.state == "alive" and age is not None and age <= timeout_s,
                "heartbeat_age_s": age,
                "recovered_by": r.recovered_by,
            }
        )
    return at, out

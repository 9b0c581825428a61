"""Worker liveness in the jobs database (`tether.jobs.liveness`), on SQLite and on a real
PostgreSQL, without DBOS: an id is refused while its worker is alive, taken back at once when
its process is gone from this host; a worker declared dead learns it at its next beat; of
many live workers racing to claim one dead worker, exactly one does; liveness is judged by the
database's clock."""

from __future__ import annotations

import os
import subprocess
import threading
from pathlib import Path

import pytest
import sqlalchemy as sa

from tether.jobs import db
from tether.jobs.liveness import Liveness, WorkerAlive, workers


@pytest.fixture(params=["sqlite", "postgres"])
def url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "postgres":
        return str(request.getfixturevalue("postgres_url"))
    return f"sqlite:///{tmp_path / 'jobs.sqlite'}"


def _live(url: str, wid: str, timeout_s: float = 30.0) -> Liveness:
    dead: list[str] = []
    lv = Liveness(url=url, executor_id=wid, project="p", timeout_s=timeout_s)
    lv.on_dead = dead.append
    return lv


def _set(url: str, wid: str, **values: object) -> None:
    with db.engine(url).begin() as c:
        c.execute(sa.update(db.WORKERS).where(db.WORKERS.c.executor_id == wid).values(**values))


def _gone_pid() -> int:
    proc = subprocess.Popen(["true"])
    proc.wait()
    return proc.pid


def test_an_id_is_refused_while_alive_and_free_once_its_process_is_gone(url: str) -> None:
    first = _live(url, "w1")
    first.register()
    with pytest.raises(WorkerAlive, match="w1 is alive"):
        _live(url, "w1").register()
    _set(url, "w1", host="elsewhere")  # alive on another machine: refused the same
    with pytest.raises(WorkerAlive):
        _live(url, "w1").register()
    _set(url, "w1", host=os.uname().nodename, pid=_gone_pid())  # crashed on this host
    again = _live(url, "w1")
    again.register()
    assert not first.beat()  # the old registration is stale now
    assert again.beat()


def test_a_silent_worker_is_claimed_once_and_learns_it_was_declared_dead(url: str) -> None:
    a, b = _live(url, "a", timeout_s=5), _live(url, "b", timeout_s=5)
    a.register()
    b.register()
    assert b.claim() == []  # a beat just now
    _set(url, "a", host="elsewhere", heartbeat_ms=0)  # silent since 1970 by the db's clock
    recovered: list[str] = []
    b.recover = lambda wid: recovered.append(wid) or 0
    assert b.tick() == ["a"]
    assert recovered == ["a"]
    assert b.claim() == []  # recovered: not claimed again
    rows = {r["executor_id"]: r for r in workers(url, 5)[1]}
    assert rows["a"]["state"] == "recovered" and rows["a"]["recovered_by"] == "b"
    assert rows["b"]["alive"] and not rows["a"]["alive"]
    dead: list[str] = []
    a.on_dead = dead.append
    assert a.tick() == [] and dead == ["a"]  # it came back: it must stop, not run anything


def test_a_clean_stop_is_claimed_without_waiting_and_a_busy_one_times_out(url: str) -> None:
    a, b = _live(url, "a"), _live(url, "b")
    a.register()
    b.register()
    a.stop()
    once = _live(url, "once")  # a short-lived `dispatch --once` beats but claims nobody
    once.claims = False
    once.register()
    assert once.tick() == []
    assert b.claim() == ["a"]
    c = _live(url, "c")
    c.busy = lambda: True
    c.register()
    c.stop()  # cut mid-run: its row is left to time out (30 s here)
    assert b.claim() == []


def _claim(lv: Liveness, start: threading.Barrier, got: dict[str, list[str]]) -> None:
    start.wait()
    got[lv.executor_id] = lv.claim()


def test_many_live_workers_racing_claim_a_dead_one_exactly_once(url: str) -> None:
    claimers = [_live(url, f"c{i}") for i in range(6)]
    for lv in claimers:
        lv.register()
    dead = _live(url, "dead")
    dead.register()
    for round_ in range(5):
        _set(url, "dead", state="alive", heartbeat_ms=0, host="elsewhere")
        _set(url, "dead", recovered_by=None, recover_ms=None)
        for lv in claimers:
            assert lv.beat()
        start = threading.Barrier(len(claimers))
        got: dict[str, list[str]] = {}

        threads = [
            threading.Thread(target=_claim, args=(lv, start, got)) for lv in claimers
        ]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        winners = [wid for wid, ids in got.items() if ids]
        assert len(winners) == 1, (round_, got)
        assert got[winners[0]] == ["dead"]


def test_liveness_uses_the_database_clock(url: str) -> None:
    """A row whose beat is recent by the database's clock is alive whatever this machine's
    clock says: the age shown is computed in SQL."""
    a = _live(url, "a")
    a.register()
    now, rows = workers(url, 30)
    (row,) = rows
    assert row["alive"] and 0 <= row["heartbeat_age_s"] < 5
    eng = db.engine(url)
    with eng.connect() as c:
        db_now = int(c.execute(sa.select(db.now_ms(eng))).scalar_one())
    assert abs(db_now - now) < 60_000

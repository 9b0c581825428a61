"""Jobs on the embedded SQLite database, through `tether jobs` in subprocesses: a queued run
does not start once Jobs are disabled (`jobs disable`, or the `ai-jobs` marker removed) while
a worker runs; `dispatch --watch` picks up new task files once they are approved, each scan
leaving one cycle record (`status --cycles`), as `dispatch --once` does; a per-model queue
limit holds across runs."""

from __future__ import annotations

import itertools
import json
import os
import signal
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import cast

import pytest

from kit.jobs import LoopModel, approve, job_sessions, lines, popen, project, task_file, tether
from kit.zygote import Forked
from tether.jobs import db, folder
from tether.jobs.engine import default_project

pytestmark = pytest.mark.slow


def _records(root: Path) -> dict[str, dict[str, object]]:
    out: dict[str, dict[str, object]] = {}
    for rec_file in (root / ".tether" / "jobs" / "runs").glob("*/*.json"):
        out[rec_file.parent.name] = json.loads(rec_file.read_text())
    return out


def _wait(cond: Callable[[], bool], what: str, timeout: float = 240) -> None:
    deadline = time.monotonic() + timeout
    while not cond():
        assert time.monotonic() < deadline, what
        time.sleep(0.1)


def _stop(proc: Forked) -> None:
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGTERM)
    try:
        proc.wait(timeout=30)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()


@pytest.mark.parametrize("how", ["disable", "marker"])
def test_queued_runs_do_not_start_once_jobs_are_disabled(tmp_path: Path, how: str) -> None:
    with LoopModel(delay_s=3.0) as model:
        root = project(
            tmp_path, model, jobs_settings={"poll_interval": "100ms", "worker_concurrency": 1}
        )
        names = [f"d{i}" for i in range(3)]
        for name in names:
            task_file(root, name, f"{name} go")
        assert tether(tmp_path, root, "dispatch", "--once", "--enqueue-only").returncode == 0
        log = tmp_path / "worker.err"
        worker = popen(tmp_path, root, "worker", "--id", "w", start_new_session=True, stderr=log)
        try:
            _wait(lambda: len(model.requests) >= 1, "the first run never started")
            if how == "disable":  # what `tether jobs disable` does, without its start-up time
                folder.set_enabled(root, False)
            else:
                (root / ".tether" / "jobs" / "ai-jobs").unlink()
            _wait(lambda: len(_records(root)) == 3, "the queued runs were not taken")
        finally:
            _stop(worker)
        recs = _records(root)
        started = [n for n in names if recs[n]["stop_reason"] == "end_turn"]
        skipped = [n for n in names if recs[n]["stop_reason"] == "disabled"]
        assert len(started) == 1 and len(skipped) == 2, recs  # the one running finished
        assert set(model.finals()) == set(started)  # the others never asked the model
        # the worker says each run it finished, one line each
        finished = sorted(line for line in log.read_text().splitlines() if "finished" in line)
        assert len(finished) == 3, log.read_text()
        for n in names:
            wid = recs[n]["workflow_id"]
            (line,) = [x for x in finished if f"finished {wid}: " in x]
            assert line.split(": ", 2)[2].startswith(cast("str", recs[n]["stop_reason"])), line
        store = job_sessions(tmp_path, root)
        assert not any(f".{n}." in info.id for info in store.list() for n in skipped)
        # a skipped run-once task is not archived: it stays to be run again
        assert all((root / ".tether" / "jobs" / f"{n}.md").exists() for n in skipped)


def test_watch_runs_new_tasks_and_every_scan_leaves_one_cycle_record(tmp_path: Path) -> None:
    with LoopModel() as model:
        root = project(tmp_path, model, jobs_settings={"poll_interval": "200ms"})
        (root / ".tether" / "jobs" / "broken.md").write_text("---\nschedule: {cron: nope}\n---\nx\n")
        url = f"sqlite:///{tmp_path / 'home' / 'jobs' / default_project(root)}.sqlite"

        def scans() -> int:
            return len(db.cycles(url, default_project(root))) if Path(url[10:]).exists() else 0

        watch = popen(tmp_path, root, "dispatch", "--watch", start_new_session=True)
        try:
            _wait(lambda: scans() >= 1, "the watch never scanned")
            task_file(root, "w0", "w0 go")  # a new task file: run once approved
            time.sleep(3)  # 15 ticks
            assert "w0" not in _records(root) and model.requests == []  # not approved yet
            approve(tmp_path, root)
            _wait(lambda: "w0" in _records(root), "w0 never ran")
            task_file(root, "w1", "w1 go")
            approve(tmp_path, root)
            _wait(lambda: "w1" in _records(root), "w1 never ran")
        finally:
            _stop(watch)
        assert model.finals() == {"w0": 1, "w1": 1}
        cycles = lines(tether(tmp_path, root, "status", "--cycles").stdout)
        assert len(cycles) >= 3
        assert sum(int(c["enqueued"]) for c in cycles) == 2
        assert all(c["rejected"] == 1 and c["tasks"] in (0, 1, 2) for c in cycles)
        assert [c["at_ms"] for c in cycles] == sorted(c["at_ms"] for c in cycles)
        once = tether(tmp_path, root, "dispatch", "--once")
        assert once.returncode == 0, once.stderr
        after = lines(tether(tmp_path, root, "status", "--cycles").stdout)
        assert len(after) == len(cycles) + 1  # one scan, one record
        assert after[-1] | {"at_ms": 0} == {
            "at_ms": 0,
            "executor_id": after[-1]["executor_id"],
            "tasks": 0,  # both ran once and were archived
            "rejected": 1,
            "due": 0,
            "enqueued": 0,
        }


def test_a_per_model_queue_runs_its_tasks_one_at_a_time(tmp_path: Path) -> None:
    with LoopModel(delay_s=0.4) as model:
        root = project(
            tmp_path,
            model,
            jobs_settings={
                "poll_interval": "100ms",
                "worker_concurrency": 4,
                "concurrency": 4,
                "model_concurrency": {"loop/m2": 1},
            },
        )
        limited = [f"q{i}" for i in range(3)]
        free = [f"o{i}" for i in range(3)]
        for name in limited:
            task_file(root, name, f"{name} go", model="loop/m2")
        for name in free:
            task_file(root, name, f"{name} go")
        out = tether(tmp_path, root, "dispatch", "--once", timeout=300)
        assert out.returncode == 0, out.stderr
        rows = lines(tether(tmp_path, root, "status").stdout)
        queues = {r["workflow_id"].split(":")[1]: r["queue"] for r in rows}
        assert len({queues[n] for n in limited}) == 1
        assert all(queues[n].endswith(".model.loop_m2") for n in limited)
        assert not any(queues[n].endswith(".model.loop_m2") for n in free)
        store = job_sessions(tmp_path, root)
        spans: dict[str, tuple[int, int]] = {}
        for r in rows:
            loaded = store.load(r["session_id"])
            (end,) = [e for e in loaded.events if e.kind == "job_run_end"]
            spans[r["workflow_id"].split(":")[1]] = (loaded.header.created_ms, end.ts_ms)
        for x, y in itertools.combinations(limited, 2):  # never two at once
            (s1, e1), (s2, e2) = spans[x], spans[y]
            assert e1 <= s2 or e2 <= s1, (x, spans[x], y, spans[y])

"""Benchmark: the scheduling + dispatch overhead Jobs adds per task, on SQLite and PostgreSQL.

Usage: python bench/jobs.py [--n 40] [--no-postgres]

The model is the tests' loopback model (`tests/kit/jobs.py`: one text reply, no tools, no
delay). Baseline, measured in the same run: the same agent run (`tether.jobs.runner.run_task`:
settings, a fresh agent, its session, one request) called N times in this process, no DBOS.
Then for each setup (SQLite with 1 worker, PostgreSQL with 1 and 3 workers): `tether jobs
worker` processes are started (worker_concurrency 1) and warmed up (each has run a task, so no
import cost is counted), N tasks are enqueued by `tether jobs dispatch --once --enqueue-only`,
and the time from the dispatch's start until the N run records exist is taken (workers start
on the first run while the rest is being enqueued). Printed per setup: the dispatch command's
wall time per task (its process start-up included), that total time per task × workers (what
one worker spends per task, dispatch included) and its excess over the baseline (the per-task
overhead: enqueue, dequeue, workflow and step records, the run record, the archive, and the
dispatch process's start-up amortized over N), with the ratio to the baseline.
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE.parent / "tests")]

from kit import jobs as jobkit  # noqa: E402
from kit import postgres as pgserver  # noqa: E402
from kit.jobs import LoopModel  # noqa: E402

SETTINGS = {"poll_interval": "50ms", "worker_concurrency": 1, "concurrency": 8}


def _records(root: Path) -> int:
    return len(list((root / ".tether" / "jobs" / "runs").glob("*/*.json")))


def _wait_records(root: Path, n: int, timeout: float = 600) -> None:
    deadline = time.monotonic() + timeout
    while _records(root) < n:
        if time.monotonic() > deadline:
            raise SystemExit(f"only {_records(root)} of {n} runs finished")
        time.sleep(0.01)


def baseline(model: LoopModel, n: int) -> float:
    """Seconds per task of the bare agent run (in process, sequential, warmed up)."""
    tmp = Path(tempfile.mkdtemp(prefix="tether-bench-jobs-"))
    try:
        root = jobkit.project(tmp, model)
        os.environ.update(jobkit.env(tmp))
        from tether.jobs.parse import Task, parse_task
        from tether.jobs.runner import run_task

        def one(i: int) -> None:
            t = parse_task(f"b{i}.md", f"b{i} answer\n")
            assert isinstance(t, Task)
            out = run_task(root, t.to_json(), "once", project="bench")
            assert out["stop_reason"] == "end_turn", out

        one(-1)
        t0 = time.perf_counter()
        for i in range(n):
            one(i)
        return (time.perf_counter() - t0) / n
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def setup_run(model: LoopModel, n: int, workers: int, url: str | None) -> tuple[float, float]:
    """(dispatch seconds per task, run seconds per task × workers)."""
    tmp = Path(tempfile.mkdtemp(prefix="tether-bench-jobs-"))
    db = {"TETHER_JOBS_DATABASE_URL": url} if url else {}
    procs: list[subprocess.Popen[str]] = []
    try:
        # a project name per setup: the PostgreSQL database is shared by the setups, and the
        # same task in the same project is the same workflow (it would not run again)
        name = f"bench-{'pg' if url else 'sqlite'}-{workers}"
        root = jobkit.project(tmp, model, jobs_settings=SETTINGS | {"project": name})
        for k in range(2 * workers):
            jobkit.task_file(root, f"warm{k}", f"warm{k} answer")
        out = jobkit.tether(tmp, root, "dispatch", "--once", "--enqueue-only", **db)
        assert out.returncode == 0, out.stderr
        for k in range(workers):
            procs.append(
                jobkit.popen(tmp, root, "worker", "--id", f"b{k}", start_new_session=True, **db)
            )
        _wait_records(root, 2 * workers)
        for i in range(n):
            jobkit.task_file(root, f"t{i:03d}", f"t{i:03d} answer")
        t0 = time.perf_counter()
        out = jobkit.tether(tmp, root, "dispatch", "--once", "--enqueue-only", **db)
        t1 = time.perf_counter()
        assert out.returncode == 0, out.stderr
        _wait_records(root, 2 * workers + n)
        t2 = time.perf_counter()
        # workers start on the first enqueued run while dispatch still enqueues the rest: the
        # run time is taken from the dispatch's start (its process start-up included)
        return (t1 - t0) / n, (t2 - t0) * workers / n
    finally:
        for p in procs:
            if p.poll() is None:
                os.killpg(p.pid, signal.SIGTERM)
        for p in procs:
            try:
                p.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(p.pid, signal.SIGKILL)
        shutil.rmtree(tmp, ignore_errors=True)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=40)
    ap.add_argument("--no-postgres", action="store_true")
    args = ap.parse_args()
    with LoopModel() as model:
        base = baseline(model, args.n)
        print(
            f"baseline: agent run alone {base * 1e3:.1f} ms/task (n={args.n}, in process)",
            flush=True,
        )

        def show(name: str, d: float, r: float) -> None:
            print(
                f"{name:20s} dispatch {d * 1e3:7.1f} ms/task (process start included) · "
                f"run {r * 1e3:7.1f} ms/task/worker · overhead {(r - base) * 1e3:+7.1f} ms "
                f"({r / base:.2f}× the bare run)",
                flush=True,
            )

        show("sqlite, 1 worker", *setup_run(model, args.n, 1, None))
        if not args.no_postgres:
            try:
                with pgserver.postgres() as url:
                    for w in (1, 3):
                        name = f"postgres, {w} worker{'s' if w > 1 else ''}"
                        show(name, *setup_run(model, args.n, w, url))
            except pgserver.Unavailable as exc:
                print(f"postgres: skipped ({exc})")


if __name__ == "__main__":
    main()

"""Benchmark Jobs: the overhead per task, the scaling over workers, the recovery after a kill.

Usage: python bench/jobs.py [--n 40] [--polls 50ms] [--tasks 200] [--delay 1.0]
                            [--workers 1,2,4] [--timeout 5] [--no-postgres]
                            [--only overhead,scaling,recovery]

The model is the tests' loopback model (`tests/kit/jobs.py`), answering every request after
`delay` seconds (0 for the overhead part).

1. Overhead (SQLite, 1 worker, no model delay). Baseline, measured in the same run: the same
   agent run (`tether.jobs.runner.run_task`: settings, a fresh agent, its session, one request,
   on a kept loop with kept providers as a worker runs it) called N times in this process,
   no DBOS, its session in the same database store the workers use. Then `tether jobs worker` processes (worker_concurrency 1) are started and
   warmed up (each has run a task), N tasks are enqueued by `tether jobs dispatch --once
   --enqueue-only`, and the time from the dispatch's start until the N run records exist is
   taken. Printed: the dispatch's wall time per task (process start-up included), the run time
   per task × workers and its excess over the baseline (the overhead per task: enqueue,
   dequeue, workflow and step records, the run record, the archive, the dispatch's start-up
   amortized over N) with the ratio to the baseline; then the same from the first run's end to
   the last's (the steady state: no process start-up, as a long-lived worker sees it).
2. Scaling (PostgreSQL): `--tasks` tasks, the model taking `--delay` s per answer, with 1, 2 and
   4 workers (worker_concurrency 1 each): tasks per second between the first run's end and the
   last's (run records' times), and the ratio to 1 worker.
3. Recovery (PostgreSQL, `jobs.worker_timeout` `--timeout` s): two workers; the one holding a
   run that is past its first request is killed with SIGKILL and never restarted; printed:
   seconds from the kill until another worker took the run (its executor id changed) and until
   it finished, next to the timeout.
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
from collections.abc import Callable
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE.parent / "tests")]

from kit import jobs as jobkit  # noqa: E402
from kit import postgres as pgserver  # noqa: E402
from kit.jobs import LoopModel  # noqa: E402
from kit.zygote import Forked  # noqa: E402

SETTINGS = {"poll_interval": "50ms", "worker_concurrency": 1, "concurrency": 8}


def _records(root: Path) -> int:
    return len(list((root / ".tether" / "jobs" / "runs").glob("*/*.json")))


def _wait(cond: Callable[[], bool], what: str, timeout: float = 1800) -> None:
    deadline = time.monotonic() + timeout
    while not cond():
        if time.monotonic() > deadline:
            raise SystemExit(f"timed out: {what}")
        time.sleep(0.01)


def _stop(procs: list[Forked]) -> None:
    for p in procs:
        if p.poll() is None:
            os.killpg(p.pid, signal.SIGTERM)
    for p in procs:
        try:
            p.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, signal.SIGKILL)
            p.wait()


def baseline(model: LoopModel, n: int) -> float:
    """Seconds per task of the bare agent run (in process, sequential, warmed up)."""
    tmp = Path(tempfile.mkdtemp(prefix="tether-bench-jobs-"))
    try:
        root = jobkit.project(tmp, model)
        os.environ.update(jobkit.env(tmp))
        from tether.jobs.parse import Task, parse_task
        from tether.jobs.runner import run_task
        from tether.jobs.warm import Warm

        store = jobkit.job_sessions(tmp, root)
        warm = Warm()  # a worker's kept loop and providers: the bare run is the worker's run

        def one(i: int) -> None:
            t = parse_task(f"b{i}.md", f"b{i} answer\n")
            assert isinstance(t, Task)
            out = run_task(root, t.to_json(), "once", project="bench", store=store, warm=warm)
            assert out["stop_reason"] == "end_turn", out

        one(-1)
        t0 = time.perf_counter()
        for i in range(n):
            one(i)
        return (time.perf_counter() - t0) / n
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def setup_run(
    model: LoopModel, n: int, workers: int, url: str | None, extra: dict[str, object] | None = None
) -> tuple[float, float, float]:
    """(dispatch seconds per task, seconds from the dispatch's start until the n runs ended,
    seconds from the first of the n runs' end to the last's)."""
    tmp = Path(tempfile.mkdtemp(prefix="tether-bench-jobs-"))
    # the environment extras for kit.jobs (Any: a **dict of str could have filled its trust=)
    db: dict[str, Any] = {"TETHER_JOBS_DATABASE_URL": url} if url else {}
    procs: list[Forked] = []
    try:
        # a project name per setup: the PostgreSQL database is shared by the setups, and the
        # same task in the same project is the same workflow (it would not run again)
        name = f"bench-{'pg' if url else 'sqlite'}-{workers}-{n}-{os.getpid()}-{time.time_ns()}"
        settings = SETTINGS | {"project": name} | (extra or {})
        root = jobkit.project(tmp, model, jobs_settings=settings)
        for k in range(2 * workers):
            jobkit.task_file(root, f"warm{k}", f"warm{k} answer")
        out = jobkit.tether(tmp, root, "dispatch", "--once", "--enqueue-only", **db)
        assert out.returncode == 0, out.stderr
        for k in range(workers):
            procs.append(
                jobkit.popen(tmp, root, "worker", "--id", f"b{k}-{name}", start_new_session=True, **db)
            )
        _wait(lambda: _records(root) >= 2 * workers, "warm-up")
        for i in range(n):
            jobkit.task_file(root, f"t{i:03d}", f"t{i:03d} answer")
        t0 = time.perf_counter()
        out = jobkit.tether(tmp, root, "dispatch", "--once", "--enqueue-only", **db)
        t1 = time.perf_counter()
        assert out.returncode == 0, out.stderr
        _wait(lambda: _records(root) >= 2 * workers + n, f"{n} runs")
        t2 = time.perf_counter()
        ends = sorted(
            p.stat().st_mtime for p in (root / ".tether" / "jobs" / "runs").glob("t*/*.json")
        )
        # workers start on the first enqueued run while dispatch still enqueues the rest: the
        # run time is taken from the dispatch's start (its process start-up included)
        return (t1 - t0) / n, t2 - t0, ends[-1] - ends[0]
    finally:
        _stop(procs)
        shutil.rmtree(tmp, ignore_errors=True)


def overhead(model: LoopModel, n: int, polls: list[str]) -> None:
    base = baseline(model, n)
    print(f"baseline: agent run alone {base * 1e3:.1f} ms/task (n={n}, in process)", flush=True)
    for poll in polls:  # the queue's poll interval: a run waits half of one on average
        d, total, span = setup_run(model, n, 1, None, {"poll_interval": poll})
        r = total / n
        steady = span / (n - 1)
        print(
            f"sqlite, 1 worker, poll {poll:>6}: dispatch {d * 1e3:7.1f} ms/task (process start "
            f"included) · run {r * 1e3:7.1f} ms/task/worker · overhead {(r - base) * 1e3:+7.1f} "
            f"ms ({r / base:.2f}× the bare run) · between the first and the last end "
            f"{steady * 1e3:7.1f} ms/task, overhead {(steady - base) * 1e3:+7.1f} ms",
            flush=True,
        )


def scaling(url: str, tasks: int, delay: float, counts: list[int]) -> None:
    with LoopModel(delay_s=delay) as model:
        first = None
        for w in counts:
            # the rate between the first run's end and the last's: the dispatch process's
            # start-up (seconds on a loaded machine) is not counted against the workers
            _, total, span = setup_run(model, tasks, w, url)
            rate = (tasks - 1) / span
            first = first or rate
            print(
                f"postgres, {w} worker(s): {tasks} tasks × {delay:g} s model, {total:6.1f} s "
                f"from the dispatch's start · {rate:5.2f} tasks/s between the first and the "
                f"last end · {rate / first:.2f}× 1 worker",
                flush=True,
            )


def recovery(url: str, timeout_s: float) -> None:
    from dbos import DBOSClient

    tmp = Path(tempfile.mkdtemp(prefix="tether-bench-jobs-"))
    db: dict[str, Any] = {"TETHER_JOBS_DATABASE_URL": url}
    procs: list[Forked] = []
    name = f"bench-recovery-{os.getpid()}"
    settings = SETTINGS | {"project": name, "worker_timeout": f"{timeout_s:g}s"}
    client = DBOSClient(system_database_url=url, application_name="tether-jobs")

    def flows() -> dict[str, tuple[str, str | None]]:
        rows = client.list_workflows(workflow_id_prefix=f"{name}:", load_input=False, load_output=False)
        return {w.workflow_id: (w.status, w.executor_id) for w in rows}

    try:
        with LoopModel(delay_s=1.0) as model:
            root = jobkit.project(tmp, model, jobs_settings=settings)
            for k in range(4):  # a tool call each: two requests, the kill lands between them
                jobkit.task_file(root, f"r{k}", f"r{k} TOOL then answer")
            out = jobkit.tether(tmp, root, "dispatch", "--once", "--enqueue-only", **db)
            assert out.returncode == 0, out.stderr
            for k in ("k0", "k1"):
                procs.append(
                    jobkit.popen(tmp, root, "worker", "--id", f"{k}-{name}", start_new_session=True, **db)
                )
            victim = f"k0-{name}"
            held: list[str] = []

            def mid_run() -> bool:
                held[:] = [w for w, (s, e) in flows().items() if (s, e) == ("PENDING", victim)]
                return bool(held) and len(model.requests) >= 1

            _wait(mid_run, "k0 never ran")
            os.killpg(procs[0].pid, signal.SIGKILL)
            t0 = time.perf_counter()
            wid = held[0]
            _wait(lambda: flows()[wid][1] != victim, "never taken over")
            taken = time.perf_counter() - t0
            _wait(lambda: flows()[wid][0] == "SUCCESS", "never finished")
            done = time.perf_counter() - t0
            print(
                f"recovery after SIGKILL (worker_timeout {timeout_s:g} s, beat "
                f"{min(5.0, timeout_s / 3):.2f} s): taken by another worker after {taken:.1f} s, "
                f"finished after {done:.1f} s (model 1 s per request)",
                flush=True,
            )
    finally:
        client.destroy()
        _stop(procs)
        shutil.rmtree(tmp, ignore_errors=True)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=40, help="tasks of the overhead part")
    ap.add_argument("--tasks", type=int, default=200, help="tasks of the scaling part")
    ap.add_argument("--delay", type=float, default=1.0, help="model seconds per answer (scaling)")
    ap.add_argument("--workers", default="1,2,4")
    ap.add_argument("--timeout", type=float, default=5.0, help="worker_timeout of the recovery part")
    ap.add_argument("--only", default="overhead,scaling,recovery")
    ap.add_argument("--polls", default="50ms", help="queue poll intervals of the overhead part")
    ap.add_argument("--no-postgres", action="store_true")
    args = ap.parse_args()
    parts = set(args.only.split(","))
    print(f"load average at start: {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores", flush=True)
    if "overhead" in parts:
        with LoopModel() as model:
            overhead(model, args.n, args.polls.split(","))
    if args.no_postgres or not parts & {"scaling", "recovery"}:
        return
    try:
        with pgserver.postgres() as url:
            if "scaling" in parts:
                scaling(url, args.tasks, args.delay, [int(w) for w in args.workers.split(",")])
            if "recovery" in parts:
                recovery(url, args.timeout)
    except pgserver.Unavailable as exc:
        print(f"postgres: skipped ({exc})")
    print(f"load average at end: {os.getloadavg()[0]:.1f}", flush=True)


if __name__ == "__main__":
    main()

"""Jobs that survive a dead machine, on a real PostgreSQL: two `tether jobs worker` processes
with their own `TETHER_HOME` and config folder (two machines sharing only the database and the
project checkout). Worker A is killed with SIGKILL mid-run and never restarted: worker B
recovers A's runs after `jobs.worker_timeout` and finishes them, exactly once, from the
sessions A started (read from the jobs database). A worker paused past the timeout (SIGSTOP)
that comes back exits without adding anything. Two live workers racing to recover one silent
worker: one claims it, each run completes once. A second worker with a live worker's id is
refused."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest
from dbos import DBOSClient

from kit import zygote
from kit.jobs import LoopModel, env, job_sessions, lines, popen, project, task_file, tether
from kit.zygote import Forked
from tether.jobs.liveness import workers

pytestmark = pytest.mark.slow

SETTINGS = {
    "poll_interval": "100ms",
    "worker_concurrency": 2,
    "concurrency": 6,
    "worker_timeout": "3s",
}


def _machine(tmp: Path, name: str, first: Path) -> Path:
    """A second machine's own home and config folder (the same user settings as `first`)."""
    here = tmp / name
    (here / "cfg").mkdir(parents=True)
    shutil.copy(first / "cfg" / "settings.json", here / "cfg" / "settings.json")
    return here


def _worker(machine: Path, root: Path, wid: str, url: str) -> Forked:
    return popen(
        machine,
        root,
        "worker",
        "--id",
        wid,
        start_new_session=True,
        stderr=machine / f"{wid}.err",
        TETHER_JOBS_DATABASE_URL=url,
    )


def _flows(url: str) -> dict[str, tuple[str, str | None]]:
    """Every workflow: id → (status, executor id)."""
    client = DBOSClient(system_database_url=url, application_name="tether-jobs")
    try:
        return {
            w.workflow_id: (w.status, w.executor_id)
            for w in client.list_workflows(load_input=False, load_output=False)
        }
    finally:
        client.destroy()


def _sid(workflow_id: str) -> str:
    project_, task, slot = workflow_id.split(":")
    return f"job.{project_[:30]}.{task}.{slot}"


def _started(store: Any, workflow_id: str) -> bool:
    """The run's session has its tool call's start recorded."""
    sid = _sid(workflow_id)
    return store.exists(sid) and any(e.kind == "tool_call_started" for e in store.load(sid).events)


def _prompted(store: Any, workflow_id: str) -> bool:
    """The run's session holds its prompt (a session that exists may hold only its header:
    a run taken over then has no history to resume, and starts anew)."""
    sid = _sid(workflow_id)
    return store.exists(sid) and any(t.role == "user" for t in store.load(sid).turns)


def _stop(*procs: Forked) -> None:
    for p in procs:
        if p.poll() is None:
            os.killpg(p.pid, signal.SIGCONT)
            os.killpg(p.pid, signal.SIGTERM)
    for p in procs:
        try:
            p.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, signal.SIGKILL)
            p.wait()


def _once(store: Any, root: Path, workflow_id: str) -> dict[str, Any]:
    """Assert the run completed exactly once; returns its `job_run_end` data."""
    name = workflow_id.split(":")[1]
    loaded = store.load(_sid(workflow_id))
    assert loaded.report.ok, loaded.report.describe()
    turns = loaded.turns
    assert len([t for t in turns if t.role == "user" and t.text.startswith(name)]) == 1
    calls = [c for t in turns for c in t.tool_calls]
    results = [x for t in turns for x in t.tool_results]
    assert len(calls) == 1 and [x.tool_call_id for x in results] == [calls[0].id]
    assert turns[-1].role == "assistant" and turns[-1].text == f"done {name}"
    (end,) = [e for e in loaded.events if e.kind == "job_run_end"]
    side = root / "side" / f"{name}.txt"
    ran = side.read_text().count("ran") if side.exists() else 0
    assert ran <= 1 if results[0].is_error else ran == 1, f"{name}: side effect {ran} times"
    assert len(list((root / ".tether" / "jobs" / "runs" / name).glob("*.json"))) == 1
    return dict(end.data)


def test_a_dead_machines_runs_finish_on_another_from_its_sessions(
    tmp_path: Path, postgres_url: str
) -> None:
    db = postgres_url
    with LoopModel(delay_s=3.0) as model:  # the model takes 3 s per answer
        a = tmp_path / "a"
        root = project(a, model, jobs_settings=SETTINGS)
        b = _machine(tmp_path, "b", a)
        names = [f"m{i}" for i in range(6)]
        for name in names:
            task_file(root, name, f"{name} TOOL then answer")
        out = tether(a, root, "dispatch", "--once", "--enqueue-only", TETHER_JOBS_DATABASE_URL=db)
        assert out.returncode == 0, out.stderr
        store = job_sessions(a, root, postgres_url)
        wa = _worker(a, root, "A", postgres_url)
        wb = _worker(b, root, "B", postgres_url)
        try:
            deadline = time.monotonic() + 300
            while not any(
                r["alive"] for r in workers(postgres_url, 3)[1] if r["executor_id"] == "A"
            ):
                assert time.monotonic() < deadline and wa.poll() is None, "A never started"
                time.sleep(0.05)
            again = tether(
                b, root, "worker", "--id", "A", TETHER_JOBS_DATABASE_URL=db
            )  # A is alive: refused
            assert again.returncode == 1, again.stderr
            assert "refused: worker id A is alive" in again.stderr
            assert len(again.stderr.strip().splitlines()) == 1
            while True:  # A holds a run whose tool call started
                held = [
                    w for w, (s, e) in _flows(postgres_url).items() if (s, e) == ("PENDING", "A")
                ]
                if any(_started(store, w) for w in held):
                    break
                assert time.monotonic() < deadline and wa.poll() is None, "A never ran"
                time.sleep(0.05)
            os.killpg(wa.pid, signal.SIGKILL)  # machine A dies and never comes back
            wa.wait(timeout=30)
            held = [w for w, (s, e) in _flows(postgres_url).items() if (s, e) == ("PENDING", "A")]
            assert held  # A's runs are left mid-run
            while True:
                flows = _flows(postgres_url)
                if len(flows) == 6 and {s for s, _ in flows.values()} == {"SUCCESS"}:
                    break
                assert time.monotonic() < deadline, flows
                assert wb.poll() is None
                time.sleep(0.1)
        finally:
            _stop(wa, wb)

        flows = _flows(postgres_url)
        for w in held:
            assert flows[w] == ("SUCCESS", "B")  # recovered on B, finished there
            assert _once(store, root, w)["resumed"]  # from A's session, not anew
        for w in flows:
            _once(store, root, w)
        rows = {
            r["executor_id"]: r
            for r in lines(tether(b, root, "workers", TETHER_JOBS_DATABASE_URL=db).stdout)
        }
        assert rows["A"]["state"] == "recovered" and rows["A"]["recovered_by"] == "B"
        # machine B shows the session of a run A started
        name = held[0].split(":")[1]
        logs = tether(b, root, "logs", name, "--turns", TETHER_JOBS_DATABASE_URL=db)
        assert logs.returncode == 0, logs.stderr
        turns = [r for r in lines(logs.stdout) if "turn" in r]
        assert turns and turns[-1]["turn"]["content"][0]["text"] == f"done {name}"
        shown = zygote.run(
            ["sessions", "show", _sid(held[0])], env=env(b, TETHER_JOBS_DATABASE_URL=db), cwd=root
        )
        assert shown.returncode == 0, shown.stderr
        assert len(lines(shown.stdout)) == len(turns)


def test_a_worker_that_comes_back_after_being_declared_dead_runs_nothing_twice(
    tmp_path: Path, postgres_url: str
) -> None:
    db = postgres_url
    with LoopModel(delay_s=1.0) as model:
        a = tmp_path / "a"
        root = project(a, model, jobs_settings=SETTINGS)
        b = _machine(tmp_path, "b", a)
        task_file(root, "r0", "r0 TOOL then answer")
        assert (
            tether(
                a, root, "dispatch", "--once", "--enqueue-only", TETHER_JOBS_DATABASE_URL=db
            ).returncode
            == 0
        )
        store = job_sessions(a, root, postgres_url)
        wa = _worker(a, root, "A", postgres_url)
        wb: Forked | None = None
        try:
            deadline = time.monotonic() + 300
            wid = ""
            while True:  # A runs it: the prompt is in the session
                flows = _flows(postgres_url)
                wid = next(iter(flows), "")
                if wid and flows[wid] == ("PENDING", "A") and _prompted(store, wid):
                    break
                assert time.monotonic() < deadline and wa.poll() is None, "A never ran"
                time.sleep(0.05)
            os.killpg(wa.pid, signal.SIGSTOP)  # A freezes (a paused VM, a long GC...)
            wb = _worker(b, root, "B", postgres_url)
            while _flows(postgres_url)[wid][0] != "SUCCESS":  # B declared A dead, ran it
                assert time.monotonic() < deadline and wb.poll() is None
                time.sleep(0.1)
            assert _flows(postgres_url)[wid] == ("SUCCESS", "B")
            os.killpg(wa.pid, signal.SIGCONT)  # A comes back: it must stop, adding nothing
            assert wa.wait(timeout=60) == 1
        finally:
            _stop(wa, *([wb] if wb else []))
        assert "declared dead" in (a / "A.err").read_text()
        assert _once(store, root, wid)["resumed"]  # B continued A's session
        assert _flows(postgres_url)[wid] == ("SUCCESS", "B")
        (record,) = (root / ".tether" / "jobs" / "runs" / "r0").glob("*.json")
        assert '"executor_id": "B"' in record.read_text()


def test_two_live_workers_racing_recover_a_dead_one_once(tmp_path: Path, postgres_url: str) -> None:
    db = postgres_url
    with LoopModel(delay_s=2.0) as model:
        a = tmp_path / "a"
        root = project(a, model, jobs_settings=SETTINGS | {"worker_concurrency": 1})
        b, c = _machine(tmp_path, "b", a), _machine(tmp_path, "c", a)
        for name in ("x0", "x1", "x2"):
            task_file(root, name, f"{name} TOOL then answer")
        assert (
            tether(
                a, root, "dispatch", "--once", "--enqueue-only", TETHER_JOBS_DATABASE_URL=db
            ).returncode
            == 0
        )
        store = job_sessions(a, root, postgres_url)
        wa = _worker(a, root, "A", postgres_url)
        wb = wc = None
        try:
            deadline = time.monotonic() + 300
            held: list[str] = []
            while not any(_started(store, w) for w in held):
                held = [
                    w for w, (s, e) in _flows(postgres_url).items() if (s, e) == ("PENDING", "A")
                ]
                assert time.monotonic() < deadline and wa.poll() is None, "A never ran"
                time.sleep(0.05)
            os.killpg(wa.pid, signal.SIGSTOP)  # silent from now on: B and C race to claim it
            wb, wc = _worker(b, root, "B", postgres_url), _worker(c, root, "C", postgres_url)
            while {s for s, _ in _flows(postgres_url).values()} != {"SUCCESS"}:
                assert time.monotonic() < deadline, _flows(postgres_url)
                time.sleep(0.1)
            os.killpg(wa.pid, signal.SIGKILL)
            wa.wait(timeout=30)
        finally:
            _stop(wa, *[w for w in (wb, wc) if w is not None])
        rows = {
            r["executor_id"]: r
            for r in lines(tether(b, root, "workers", TETHER_JOBS_DATABASE_URL=db).stdout)
        }
        assert rows["A"]["state"] == "recovered" and rows["A"]["recovered_by"] in ("B", "C")
        flows = _flows(postgres_url)
        assert flows[held[0]][1] in ("B", "C")
        for w in flows:
            _once(store, root, w)
        assert _once(store, root, held[0])["resumed"]

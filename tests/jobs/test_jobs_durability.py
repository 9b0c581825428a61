"""Durability: `tether jobs dispatch --once` killed with SIGKILL (its whole process group) at
20+ seeded random instants while 40 tool-using tasks run; after a last uninterrupted pass every
task completed exactly once: one SUCCESS workflow, one run record, a valid session holding the
prompt once, one tool call with one result, one final answer, and the tool's side effect at
most once (exactly once when its result was recorded)."""

from __future__ import annotations

import os
import random
import signal
import time
from pathlib import Path

import pytest

from kit.jobs import LoopModel, job_sessions, lines, popen, project, task_file, tether

pytestmark = pytest.mark.slow  # `tether jobs` processes (DBOS), one interpreter each

KILLS = 20


def test_kill_9_at_random_points_then_every_task_completes_exactly_once(tmp_path: Path) -> None:
    rng = random.Random(1717)
    with LoopModel(delay_s=0.05) as model:
        root = project(
            tmp_path,
            model,
            jobs_settings={"poll_interval": "100ms", "worker_concurrency": 3, "concurrency": 3},
        )
        names = [f"t{i:02d}" for i in range(40)]
        for i, name in enumerate(names):
            # a scheduled task (never archived) whose slot is fixed: an `at` time passed, so a
            # run crossing a slot boundary (every 6 h: 00, 06, 12, 18 UTC) does not see new slots
            sched = {"schedule": {"at": "2026-01-01T00:00:00Z"}} if i % 2 else {}
            task_file(root, name, f"{name} TOOL then answer", **sched)
        kills = 0
        for _ in range(KILLS + 8):
            if kills >= KILLS:
                break
            # kill right after 1 to 3 more model requests (+ up to 0.3 s): mid-stream, while a
            # turn or result is persisted, while the tool runs, between steps...
            seen = len(model.requests) + rng.randint(1, 3)
            proc = popen(tmp_path, root, "dispatch", "--once", start_new_session=True)
            deadline = time.monotonic() + 60
            while len(model.requests) < seen and proc.poll() is None:
                assert time.monotonic() < deadline, "no progress"
                time.sleep(0.01)
            time.sleep(rng.uniform(0, 0.3))
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
                kills += 1
            proc.wait(timeout=30)
        assert kills >= KILLS
        final = tether(tmp_path, root, "dispatch", "--once")
        assert final.returncode == 0, final.stderr
        status = lines(tether(tmp_path, root, "status").stdout)
        assert sorted(r["workflow_id"].split(":")[1] for r in status) == names
        assert {r["status"] for r in status} == {"SUCCESS"}

        jobs = root / ".tether" / "jobs"
        store = job_sessions(tmp_path, root)
        resumed = 0
        for r in status:
            name = r["workflow_id"].split(":")[1]
            assert len(list((jobs / "runs" / name).glob("*.json"))) == 1
            loaded = store.load(r["session_id"])
            assert loaded.report.ok, loaded.report.describe()
            turns = loaded.turns
            prompts = [t for t in turns if t.role == "user" and t.text.startswith(name)]
            assert len(prompts) == 1
            calls = [c for t in turns for c in t.tool_calls]
            results = [x for t in turns for x in t.tool_results]
            assert len(calls) == 1 and [x.tool_call_id for x in results] == [calls[0].id]
            assert turns[-1].role == "assistant" and turns[-1].text == f"done {name}"
            ends = [e for e in loaded.events if e.kind == "job_run_end"]
            assert len(ends) == 1
            resumed += bool(ends[0].data.get("resumed"))
            side = root / "side" / f"{name}.txt"
            ran = side.read_text().count("ran") if side.exists() else 0
            if results[0].is_error:  # cut between its start and its recorded result
                assert ran <= 1
            else:
                assert ran == 1, f"{name}: side effect {ran} times"
        assert resumed >= 1  # some kills landed mid-run, and those runs were continued
        archived = {p.stem for p in (jobs / "archive").glob("*.md")}
        assert archived == {n for i, n in enumerate(names) if i % 2 == 0}

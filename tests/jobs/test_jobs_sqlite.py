"""Jobs end to end on the embedded SQLite system database, through `tether jobs` in
subprocesses with a loopback model: 20 tasks of mixed schedules all run, run-once tasks are
archived, a second `dispatch --once` runs nothing new; `list`/`status` start no agent."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from dbos import DBOSClient

from kit.jobs import (
    LoopModel,
    approve,
    job_sessions,
    jobs_url,
    lines,
    project,
    task_file,
    tether,
)
from tether.jobs.engine import APP_NAME

pytestmark = pytest.mark.slow  # `tether jobs` processes (DBOS), one interpreter each

FAST = {"poll_interval": "100ms", "worker_concurrency": 4, "concurrency": 4}


def _twenty(root: Path) -> tuple[set[str], set[str]]:
    """8 run-once, 4 every, 4 cron, 2 at in the past, 2 at in the future."""
    once: set[str] = set()
    due: set[str] = set()
    for i in range(8):
        task_file(root, f"once{i}", f"once{i} say hi")
        once.add(f"once{i}")
    # slots that stay the same for the length of a test (a `*/5` cron or an `every: 1h` slot
    # changes while a slow run lasts, and the second dispatch then rightly runs the new slot)
    for i in range(4):
        task_file(root, f"every{i}", f"every{i} go", schedule={"every": "672h"})
        task_file(root, f"cron{i}", f"cron{i} go", schedule={"cron": "0 0 1 1 *"})
        due |= {f"every{i}", f"cron{i}"}
    for i in range(2):
        task_file(root, f"past{i}", f"past{i} go", schedule={"at": "2020-01-01T00:00:00Z"})
        task_file(root, f"future{i}", f"future{i} go", schedule={"at": "2099-01-01T00:00:00Z"})
        due.add(f"past{i}")
    return once, due | once


def test_twenty_tasks_run_once_each_and_a_second_dispatch_runs_nothing(tmp_path: Path) -> None:
    with LoopModel() as model:
        root = project(tmp_path, model, jobs_settings=FAST)
        once, due = _twenty(root)
        listed = tether(tmp_path, root, "list")
        assert listed.returncode == 0, listed.stderr
        assert len(lines(listed.stdout)) == 20
        status = tether(tmp_path, root, "status")
        assert status.returncode == 0 and status.stdout == ""
        assert model.requests == []  # list and status start no agent

        first = tether(tmp_path, root, "dispatch", "--once")
        assert first.returncode == 0, first.stderr
        rows = lines(first.stdout)
        assert {r["workflow_id"].split(":")[1] for r in rows} == due
        assert all(r["status"] == "SUCCESS" and r["stop_reason"] == "end_turn" for r in rows)
        assert all(r["answer"] == f"done {r['workflow_id'].split(':')[1]}" for r in rows)
        assert model.finals() == dict.fromkeys(due, 1)
        jobs = root / ".tether" / "jobs"
        assert {p.stem for p in (jobs / "archive").glob("*.md")} == once
        assert not any((jobs / f"{name}.md").exists() for name in once)
        assert (jobs / "future0.md").exists() and (jobs / "every0.md").exists()
        for name in due:  # one record per run, with the session it names
            (record,) = (jobs / "runs" / name).glob("*.json")
            assert record.is_file()
        store = job_sessions(tmp_path, root)
        for r in rows:
            loaded = store.load(r["session_id"])
            assert loaded.report.ok
            assert [t.role for t in loaded.turns] == ["user", "assistant"]
        # one DBOS step per run, the archive of a run-once task included (it is no step)
        client = DBOSClient(system_database_url=jobs_url(tmp_path, root), application_name=APP_NAME)
        try:
            for r in rows:
                steps = client.list_workflow_steps(r["workflow_id"])
                assert [s["function_name"] for s in steps] == ["tether_job_agent_run"], steps
        finally:
            client.destroy()

        n = len(model.requests)
        second = tether(tmp_path, root, "dispatch", "--once")
        assert second.returncode == 0, second.stderr
        assert "0 new runs enqueued" in second.stderr
        assert len(model.requests) == n  # nothing ran again

        status = tether(tmp_path, root, "status")
        assert {r["status"] for r in lines(status.stdout)} == {"SUCCESS"}
        assert len(lines(status.stdout)) == len(due)
        logs = tether(tmp_path, root, "logs", "cron0")
        (rec,) = lines(logs.stdout)
        assert rec["answer"] == "done cron0" and rec["usage"]["output_tokens"] > 0


@pytest.mark.parametrize(
    ("front", "reason"),
    [({"model": "nosuchprovider/xyz"}, "nosuchprovider"), ({"tools": ["nosuchtool"]}, "nosuchtool")],
    ids=["model", "tool"],
)
def test_a_task_with_an_unknown_model_or_tool_fails_its_run_with_the_reason(
    tmp_path: Path, front: dict[str, object], reason: str
) -> None:
    """A task file naming a provider or a tool that does not exist: no traceback, the run's
    record and `jobs logs` say why, the task is not archived, the other task runs with the tools
    its `tools` names and no others."""
    with LoopModel() as model:
        root = project(tmp_path, model)
        task_file(root, "bad", "bad go", **front)
        task_file(root, "good", "good TOOL", tools=["bash"])
        done = tether(tmp_path, root, "dispatch", "--once")
        assert done.returncode == 0, done.stderr
        assert "Traceback" not in done.stderr
        (record,) = (root / ".tether" / "jobs" / "runs" / "bad").glob("*.json")
        outcome = json.loads(record.read_text())
        assert outcome["stop_reason"] == "error" and reason in outcome["error"]
        assert (root / ".tether" / "jobs" / "bad.md").is_file()  # not archived: it failed
        assert model.finals() == {"good": 1}
        offered = {t["function"]["name"] for r in model.requests for t in r["body"]["tools"]}
        assert offered == {"bash"}
        logs = tether(tmp_path, root, "logs", "bad")
        assert logs.returncode == 0 and reason in logs.stdout + logs.stderr


def test_disabled_jobs_dispatch_nothing_and_say_so(tmp_path: Path) -> None:
    with LoopModel() as model:
        root = project(tmp_path, model, jobs_settings=FAST)
        task_file(root, "a", "a go")
        assert tether(tmp_path, root, "disable").returncode == 0
        out = tether(tmp_path, root, "dispatch", "--once")
        assert out.returncode == 1 and "disabled" in out.stderr
        assert len(out.stderr.strip().splitlines()) == 1
        assert model.requests == []
        assert tether(tmp_path, root, "enable").returncode == 0
        assert tether(tmp_path, root, "dispatch", "--once").returncode == 0
        assert model.finals() == {"a": 1}


def test_add_checks_the_file_and_refuses_a_duplicate_id(tmp_path: Path) -> None:
    with LoopModel() as model:
        root = project(tmp_path, model)
        good = tmp_path / "report.md"
        good.write_text("---\nid: report\nschedule:\n  every: 1h\n---\nwrite it\n")
        assert tether(tmp_path, root, "add", str(good)).returncode == 0
        assert (root / ".tether" / "jobs" / "report.md").is_file()
        again = tether(tmp_path, root, "add", str(good))
        assert again.returncode == 1 and "duplicate_id" in again.stderr
        bad = tmp_path / "bad.md"
        bad.write_text("---\nschedule:\n  cron: nope\n---\nx\n")
        out = tether(tmp_path, root, "add", str(bad))
        assert out.returncode == 1 and "schedule" in out.stderr
        assert "Traceback" not in out.stderr


def test_the_views_of_a_project_never_dispatched_show_nothing_and_an_unknown_task_is_refused(
    tmp_path: Path,
) -> None:
    """Before the first dispatch there is no jobs database: every view shows nothing, exit 0
    (as `status` does); a task id that names no file, record or run is refused by `cancel` as
    by `logs` (exit 1), and an existing task with nothing to cancel is not."""
    with LoopModel() as model:
        root = project(tmp_path, model, jobs_settings=FAST)
        task_file(root, "real", "real go")
        approve(tmp_path, root)
        for args in (["status"], ["status", "--cycles"], ["workers"]):
            out = tether(tmp_path, root, *args)
            assert (out.returncode, out.stdout) == (0, ""), (args, out.stderr)
            assert len(out.stderr.strip().splitlines()) == 1, out.stderr
        assert not list((tmp_path / "home" / "jobs").glob("*.sqlite"))  # views create nothing
        for args in (["cancel", "nothing"], ["logs", "nothing"]):
            out = tether(tmp_path, root, *args)
            assert out.returncode == 1 and "no task nothing" in out.stderr, (args, out.stderr)
        out = tether(tmp_path, root, "cancel", "real")
        assert out.returncode == 0 and "cancelled 0 runs of real" in out.stderr
        assert model.requests == []

"""`tether jobs dispatch|run|worker` refuse a project whose files (task files included) are not
approved: one line, exit 1, nothing enqueued; after `tether trust` the run goes ahead, and the
archive of a run-once task keeps the approval. `jobs logs` of an unknown task is an error."""

from __future__ import annotations

from pathlib import Path

import pytest

from kit.jobs import LoopModel, approve, lines, project, task_file, tether

pytestmark = pytest.mark.slow  # `tether jobs` processes (DBOS), one interpreter each


def test_an_unapproved_project_is_refused_then_runs_once_approved(tmp_path: Path) -> None:
    with LoopModel() as model:
        root = project(tmp_path, model, jobs_settings={"poll_interval": "100ms"})
        task_file(root, "evil", "evil say hi", tools=["bash"])
        for args in (("dispatch", "--once", "--enqueue-only"), ("run", "evil"), ("worker",)):
            out = tether(tmp_path, root, *args, trust=False)
            assert out.returncode == 1, (args, out.stderr)
            [line] = out.stderr.strip().splitlines()
            assert line.startswith("tether: refused:") and ".tether/jobs/evil.md (new)" in line
            assert "tether trust" in line
        assert not (tmp_path / "home" / "jobs").exists() or not any(
            (tmp_path / "home" / "jobs").iterdir()
        )  # no database was even created
        approve(tmp_path, root)
        done = tether(tmp_path, root, "dispatch", "--once", trust=False)
        assert done.returncode == 0, done.stderr
        [row] = lines(done.stdout)
        assert row["status"] == "SUCCESS"
        assert not (root / ".tether" / "jobs" / "evil.md").exists()  # archived
        # the archive did not break the approval: the next dispatch is not refused
        again = tether(tmp_path, root, "dispatch", "--once", trust=False)
        assert again.returncode == 0 and "refused" not in again.stderr, again.stderr


def test_logs_of_an_unknown_task_is_an_error(tmp_path: Path) -> None:
    with LoopModel() as model:
        root = project(tmp_path, model)
        out = tether(tmp_path, root, "logs", "nosuch")
        assert out.returncode == 1
        assert out.stderr.strip().splitlines() == [
            f"tether: no task nosuch in {root / '.tether' / 'jobs'} and no run records of it"
        ]

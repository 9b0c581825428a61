"""`tether jobs cancel ID` interrupts a running task: the agent is cancelled as `tether run`
is on SIGINT (the running tool call gets an `interrupted` result, the session stays valid),
the workflow ends CANCELLED, and the run record says `cancelled`."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from kit.jobs import LoopModel, job_sessions, lines, popen, project, task_file, tether


def _started(tmp: Path, root: Path) -> bool:
    """True once a tool call's start is recorded in a session of the jobs database."""
    if not (tmp / "home" / "jobs").is_dir():
        return False
    store = job_sessions(tmp, root)
    return any(
        e.kind == "tool_call_started" for info in store.list() for e in store.load(info.id).events
    )

pytestmark = pytest.mark.slow  # `tether jobs` processes (DBOS), one interpreter each


def test_cancel_interrupts_a_running_task(tmp_path: Path) -> None:
    with LoopModel() as model:
        root = project(tmp_path, model, jobs_settings={"poll_interval": "100ms"})
        task_file(root, "slow", "slow SLOW work")
        proc = popen(tmp_path, root, "dispatch", "--once")
        try:
            deadline = time.monotonic() + 240
            while not _started(tmp_path, root):
                assert time.monotonic() < deadline and proc.poll() is None
                time.sleep(0.05)
            time.sleep(0.3)  # the sleep is running
            out = tether(tmp_path, root, "cancel", "slow")
            assert out.returncode == 0, out.stderr
            assert len(lines(out.stdout)) == 1
            assert proc.wait(timeout=240) == 0  # generous: a loaded CI machine
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        (rec,) = lines(tether(tmp_path, root, "logs", "slow").stdout)
        assert rec["stop_reason"] == "cancelled"
        (row,) = lines(tether(tmp_path, root, "status").stdout)
        assert row["status"] == "CANCELLED"
        loaded = job_sessions(tmp_path, root).load(rec["session_id"])
        assert loaded.report.ok
        (result,) = [r for t in loaded.turns for r in t.tool_results]
        assert result.is_error and result.text.startswith("cancelled while running")
        # a cancelled run-once task is not archived: it stays to be looked at
        assert (root / ".tether" / "jobs" / "slow.md").exists()

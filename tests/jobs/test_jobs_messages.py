"""The Jobs messages a new user meets first (the third trial): an unreachable PostgreSQL is
tether's one line (DBOS printed its own three lines before it, and `jobs cancel` a traceback);
`schedule: "@daily"` names the three schedules (it was pydantic's "Input should be a valid
dictionary")."""

from __future__ import annotations

from pathlib import Path

import pytest

from kit.cli import tether
from tether.jobs.parse import Rejected, parse_task

URL = "postgresql://u:secret@127.0.0.1:1/db"


def test_a_schedule_that_is_not_a_mapping_names_the_three_forms() -> None:
    got = parse_task("d.md", '---\nschedule: "@daily"\n---\nsummarize\n')
    assert isinstance(got, Rejected) and got.reason == "schedule"
    assert got.detail == (
        "'@daily' is not a schedule: write one of cron: \"0 3 * * *\", every: 30m or "
        "at: 2026-12-01T03:00:00Z on its own line under schedule:"
    )
    two = parse_task("d.md", "---\nschedule:\n  cron: '0 3 * * *'\n  every: 1h\n---\nx\n")
    assert isinstance(two, Rejected) and "cron: \"0 3 * * *\", every: 30m or at:" in two.detail


@pytest.mark.parametrize("command", [["status"], ["cancel", "nightly"], ["list"]])
def test_an_unreachable_database_is_one_line(tmp_path: Path, command: list[str]) -> None:
    work = tmp_path / "work"
    (work / ".tether" / "jobs").mkdir(parents=True)
    (work / ".tether" / "jobs" / "ai-jobs").write_text("")
    (work / ".tether" / "jobs" / "nightly.md").write_text("summarize\n")
    done = tether(["jobs", *command], tmp_path / "home", cwd=work, TETHER_JOBS_DATABASE_URL=URL)
    if command == ["list"]:  # reads the folder only: no database needed
        assert done.returncode == 0, done.stderr
        return
    lines = [ln for ln in done.stderr.splitlines() if "not approved" not in ln]
    assert done.returncode == 1, done.stderr
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith("tether: jobs database postgresql://u:***@127.0.0.1:1/db: ")
    assert "secret" not in done.stderr and "Traceback" not in done.stderr

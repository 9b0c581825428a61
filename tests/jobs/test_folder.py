"""The jobs folder: markers, the atomic and idempotent archive, run records, and the trust
check leaving out what Jobs itself writes (the archive, the run records) but not task files."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from tether.jobs import folder
from tether.settings.trust import approve, check_trust


def test_markers(tmp_path: Path) -> None:
    assert not folder.is_enabled(tmp_path)
    folder.init(tmp_path)
    assert folder.is_enabled(tmp_path)
    folder.set_enabled(tmp_path, False)
    assert not folder.is_enabled(tmp_path)
    folder.set_enabled(tmp_path, True)
    assert folder.is_enabled(tmp_path)


def test_archive_moves_once_and_leaves_an_edited_file(tmp_path: Path) -> None:
    d = folder.init(tmp_path)
    (d / "a.md").write_text("do a\n")
    digest = hashlib.sha256(b"do a\n").hexdigest()
    assert folder.archive(tmp_path, "a.md", digest)
    assert not (d / "a.md").exists() and (d / "archive" / "a.md").read_text() == "do a\n"
    assert not folder.archive(tmp_path, "a.md", digest)  # again: nothing to do
    (d / "a.md").write_text("do a, differently\n")
    assert not folder.archive(tmp_path, "a.md", digest)  # edited since: a new run, kept
    assert (d / "a.md").exists()


def test_what_jobs_writes_needs_no_approval_but_task_files_do(tmp_path: Path) -> None:
    d = folder.init(tmp_path)
    (d / "a.md").write_text("do a\n")
    approve(tmp_path)
    assert check_trust(tmp_path).trusted
    folder.archive(tmp_path, "a.md", hashlib.sha256(b"do a\n").hexdigest())
    folder.write_record(tmp_path, "a", "once-x", {"answer": "ok"})
    # the archive and the record are not changes, and an archived (removed) task file is not
    # either: the project stays approved for the next dispatch
    assert check_trust(tmp_path).trusted
    (d / "b.md").write_text("do b\n")
    assert check_trust(tmp_path).changes == ((".tether/jobs/b.md", "new"),)
    approve(tmp_path)
    (d / "b.md").write_text("do b, and more\n")
    assert check_trust(tmp_path).changes == ((".tether/jobs/b.md", "changed"),)
    approve(tmp_path)
    # no removed file is a change (a refused project loads no project settings either)
    (tmp_path / ".tether" / "settings.json").write_text("{}")
    approve(tmp_path)
    (tmp_path / ".tether" / "settings.json").unlink()
    assert check_trust(tmp_path).trusted
    assert folder.read_records(tmp_path, "a") == [{"answer": "ok"}]


def test_projects_named_alike_get_their_own_key(tmp_path: Path) -> None:
    from tether.jobs.engine import default_project, jobs_config
    from tether.settings import AgentConfig

    a, b = tmp_path / "x" / "app", tmp_path / "y" / "app"
    c, e = tmp_path / "jobs proj é", tmp_path / "jobs proj ü"
    for p in (a, b, c, e):
        p.mkdir(parents=True)
    keys = {default_project(p) for p in (a, b, c, e)}
    assert len(keys) == 4
    assert default_project(a).startswith("app-") and default_project(a) == default_project(a)
    cfg_a, cfg_b = jobs_config(a, AgentConfig()), jobs_config(b, AgentConfig())
    assert cfg_a.database_url != cfg_b.database_url and cfg_a.queue != cfg_b.queue
    pinned = AgentConfig().with_values({"jobs.project": "shared"})
    assert jobs_config(a, pinned).project == jobs_config(b, pinned).project == "shared"


@pytest.mark.parametrize("url", ["mysql://x@127.0.0.1/db", "redis://h", "postgres"])
def test_a_database_url_of_another_kind_is_one_line(tmp_path: Path, url: str) -> None:
    """The third trial: `mysql://…` was taken for PostgreSQL on port 5432 (DBOS's errors)."""
    from kit.cli import run_cli

    (tmp_path / "work").mkdir()
    ran = run_cli(["jobs", "status"], tmp_path / "home", TETHER_JOBS_DATABASE_URL=url)
    assert ran.returncode == 1, ran.stderr
    assert ran.stderr.strip().endswith(
        "URLs are not supported; use postgresql://… (or leave it unset for the embedded SQLite "
        "file)"
    ), ran.stderr
    assert len(ran.stderr.strip().splitlines()) == 1, ran.stderr

"""The jobs folder: markers, the atomic and idempotent archive, run records, and the trust
check leaving out what Jobs itself writes (the archive, the run records) but not task files."""

from __future__ import annotations

import hashlib
from pathlib import Path

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
    state = check_trust(tmp_path)
    assert state.changes == ((".tether/jobs/a.md", "removed"),)  # not the archive/record
    approve(tmp_path)
    (d / "b.md").write_text("do b\n")
    assert check_trust(tmp_path).changes == ((".tether/jobs/b.md", "new"),)
    assert folder.read_records(tmp_path, "a") == [{"answer": "ok"}]

"""The one-time artifact migration: both legacy layouts, conflicts, re-runs, and the store
running it when opened."""

from __future__ import annotations

import os
from pathlib import Path

from tether.session import SessionStore
from tether.session.migrate import MIGRATE_LOCK, MigrationReport, migrate_artifacts


def _tree(root: Path) -> dict[str, str]:
    return {
        str(p.relative_to(root)): p.read_text()
        for p in sorted(root.rglob("*"))
        if p.is_file() and p.name != MIGRATE_LOCK
    }


def test_nothing_to_migrate_is_cheap_and_empty(tmp_path: Path) -> None:
    assert migrate_artifacts(tmp_path / "missing") == MigrationReport()
    (tmp_path / "s1.jsonl").write_text("{}\n")
    (tmp_path / "s1" / "tool-results").mkdir(parents=True)
    assert migrate_artifacts(tmp_path) == MigrationReport()
    assert not (tmp_path / MIGRATE_LOCK).exists()  # no lock taken when nothing is legacy


def test_legacy_layouts_are_folded_in_but_persisted_outputs_stay(tmp_path: Path) -> None:
    """Persisted outputs are named by absolute path in stored stubs: they never move."""
    root = tmp_path
    (root / "tool-results" / "s1").mkdir(parents=True)
    (root / "tool-results" / "s1" / "call_1.txt").write_text("one")
    (root / "tool-results" / "s2").mkdir()
    (root / "tool-results" / "s2" / "call_2.txt").write_text("two")
    legacy = root / "s3.artifacts"
    for kind in ("tool-results", "tasks", "mcp-warnings"):
        (legacy / kind).mkdir(parents=True)
    (legacy / "tool-results" / "c.txt").write_text("three")
    (legacy / "tasks" / "t.log").write_text("log")
    (legacy / "tasks" / "nested").mkdir()
    (legacy / "tasks" / "nested" / "x").write_text("deep")
    (legacy / "mcp-warnings" / "w.json").write_text("{}")
    report = migrate_artifacts(root)
    assert report.moved == 3 and report.conflicts == () and report.errors == ()
    assert set(report.removed_dirs) == {legacy / "tasks", legacy / "mcp-warnings"}
    assert _tree(root) == {
        "tool-results/s1/call_1.txt": "one",
        "tool-results/s2/call_2.txt": "two",
        "s3.artifacts/tool-results/c.txt": "three",
        "s3/tasks/t.log": "log",
        "s3/tasks/nested/x": "deep",
        "s3/mcp-warnings/w.json": "{}",
    }
    assert (root / "s3").stat().st_mode & 0o777 == 0o700
    # safe to re-run: nothing moves
    assert migrate_artifacts(root) == MigrationReport()


def test_conflicts_are_left_for_the_user_and_counted_on_every_run(tmp_path: Path) -> None:
    root = tmp_path
    (root / "s1" / "tasks").mkdir(parents=True)
    (root / "s1" / "tasks" / "t1.log").write_text("new")
    (root / "s1.artifacts" / "tasks").mkdir(parents=True)
    (root / "s1.artifacts" / "tasks" / "t1.log").write_text("old")
    (root / "s1.artifacts" / "tasks" / "t2.log").write_text("only old")
    report = migrate_artifacts(root)
    src = root / "s1.artifacts" / "tasks" / "t1.log"
    assert report.moved == 1 and report.conflicts == (src,)
    assert report.removed_dirs == ()  # the legacy folder still holds the conflict
    assert (root / "s1" / "tasks" / "t1.log").read_text() == "new"  # never replaced
    assert src.read_text() == "old"
    assert (root / "s1" / "tasks" / "t2.log").read_text() == "only old"
    second = migrate_artifacts(root)
    assert second.moved == 0 and second.conflicts == (src,)
    # once the user removes the leftover, the next run cleans the empty legacy folders
    src.unlink()
    third = migrate_artifacts(root)
    assert third.moved == 0 and third.removed_dirs == (
        root / "s1.artifacts" / "tasks",
        root / "s1.artifacts",
    )


def test_folder_conflicts_and_symlinks(tmp_path: Path) -> None:
    root = tmp_path
    (root / "s1" / "tasks" / "job").mkdir(parents=True)  # an existing (empty) folder
    (root / "s1.artifacts" / "tasks" / "job").mkdir(parents=True)
    (root / "s1.artifacts" / "tasks" / "job" / "log").write_text("x")
    outside = tmp_path / "outside.txt"
    outside.write_text("target")
    os.symlink(outside, root / "s1.artifacts" / "tasks" / "link")
    report = migrate_artifacts(root)
    assert report.conflicts == (root / "s1.artifacts" / "tasks" / "job",)
    assert report.moved == 1
    moved_link = root / "s1" / "tasks" / "link"
    assert moved_link.is_symlink() and os.readlink(moved_link) == str(outside)
    assert list((root / "s1" / "tasks" / "job").iterdir()) == []  # not merged into


def test_real_sessions_with_legacy_looking_names_are_left_alone(tmp_path: Path) -> None:
    root = tmp_path
    # a session whose id is "tool-results": its artifact folder is not a legacy layout
    (root / "tool-results.jsonl").write_text("{}\n")
    (root / "tool-results" / "tool-results").mkdir(parents=True)
    (root / "tool-results" / "tool-results" / "c.txt").write_text("mine")
    # a session whose id ends with ".artifacts"
    (root / "x.artifacts.jsonl").write_text("{}\n")
    (root / "x.artifacts" / "tasks").mkdir(parents=True)
    (root / "x.artifacts" / "tasks" / "t.log").write_text("mine too")
    # invalid session ids under the legacy folders are not touched
    (root / "tool-results.jsonl").unlink()
    (root / "tool-results" / ".hidden").mkdir()
    (root / "tool-results" / ".hidden" / "f").write_text("h")
    (root / "tool-results.jsonl").write_text("{}\n")
    before = _tree(root)
    assert migrate_artifacts(root) == MigrationReport()
    assert _tree(root) == before


def test_store_runs_the_migration_when_opened(tmp_path: Path) -> None:
    root = tmp_path / "sessions"
    (root / "s1.artifacts" / "tasks").mkdir(parents=True)
    (root / "s1.artifacts" / "tasks" / "t.log").write_text("legacy log")
    store = SessionStore(root)
    assert store.migration.moved == 1
    assert (store.artifact_subdir("s1", "tasks", create=False) / "t.log").read_text() == (
        "legacy log"
    )
    assert SessionStore(root).migration == MigrationReport()
    assert SessionStore(tmp_path / "nowhere").migration == MigrationReport()
    assert not (tmp_path / "nowhere").exists()
    # opting out does no I/O at all
    (root / "s2.artifacts" / "tasks").mkdir(parents=True)
    (root / "s2.artifacts" / "tasks" / "f").write_text("x")
    assert SessionStore(root, migrate=False).migration == MigrationReport()
    assert (root / "s2.artifacts" / "tasks" / "f").exists()


def test_delete_removes_migrated_artifacts_and_is_idempotent_in_effect(tmp_path: Path) -> None:
    root = tmp_path / "sessions"
    (root / "s1.artifacts" / "tool-results").mkdir(parents=True)
    (root / "s1.artifacts" / "tool-results" / "c.txt").write_text("x")
    store = SessionStore(root)
    store.create("s1", cwd="/").close()
    store.delete("s1")
    assert not store.path("s1").exists() and not store.session_dir("s1").exists()
    assert sorted(p.name for p in root.iterdir()) == [MIGRATE_LOCK]

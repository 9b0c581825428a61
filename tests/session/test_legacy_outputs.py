"""Persisted outputs of older layouts: the migration leaves them where stored stubs name them
(absolute paths), a resumed session's `read` still reads them, and deleting the session
reclaims them with every other legacy folder it has — best effort, never raising half-way."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tether.messages import ToolCallBlock
from tether.session import SessionStore
from tether.tools import ToolContext, ToolRegistry, builtin_tools, run_tool_call, scrubbed_env


def _legacy_session(root: Path) -> tuple[SessionStore, Path, Path]:
    """A session `s1` with outputs in both legacy layouts and a conflict left by an earlier
    migration; returns the store and the two legacy output files."""
    one = root / "tool-results" / "s1" / "call_1.txt"
    two = root / "s1.artifacts" / "tool-results" / "call_2.txt"
    for path, text in ((one, "legacy output one\n"), (two, "legacy output two\n")):
        path.parent.mkdir(parents=True)
        path.write_text(text)
    (root / "s1.artifacts" / "tasks").mkdir()
    (root / "s1.artifacts" / "tasks" / "t.log").write_text("a conflict: kept in place\n")
    (root / "s1" / "tasks").mkdir(parents=True)
    (root / "s1" / "tasks" / "t.log").write_text("the migrated one\n")
    store = SessionStore(root)
    store.create("s1", cwd="/").close()
    return store, one, two


def test_the_migration_leaves_persisted_outputs_where_their_stubs_point(tmp_path: Path) -> None:
    store, one, two = _legacy_session(tmp_path / "sessions")
    assert one.read_text() == "legacy output one\n"
    assert two.read_text() == "legacy output two\n"
    assert not (store.session_dir("s1") / "tool-results").exists()


async def test_a_resumed_session_reads_a_legacy_output_by_its_stored_path(tmp_path: Path) -> None:
    store, one, two = _legacy_session(tmp_path / "sessions")
    work = tmp_path / "work"
    work.mkdir()
    ctx = ToolContext.create(work, env=scrubbed_env(), session_dir=store.session_dir("s1"))
    reg = ToolRegistry(builtin_tools())
    for path, text in ((one, "legacy output one"), (two, "legacy output two")):
        call = ToolCallBlock(id="r", name="read", arguments={"path": str(path)})
        result = await run_tool_call(reg, call, ctx)
        assert not result.is_error and text in result.text, result.text
    # another session's legacy outputs stay out of reach
    other = tmp_path / "sessions" / "tool-results" / "s9" / "x.txt"
    other.parent.mkdir()
    other.write_text("not yours")
    call = ToolCallBlock(id="r", name="read", arguments={"path": str(other)})
    assert (await run_tool_call(reg, call, ctx)).is_error


def test_delete_reclaims_the_legacy_folders_too(tmp_path: Path) -> None:
    root = tmp_path / "sessions"
    store, _, _ = _legacy_session(root)
    report = store.delete("s1")
    assert report.complete and report.errors == ()
    assert not (root / "tool-results" / "s1").exists()
    assert not (root / "s1.artifacts").exists()
    assert not store.session_dir("s1").exists() and not store.exists("s1")
    # a session with nothing but a legacy folder left is still found, and deleted
    (root / "tool-results" / "s2").mkdir()
    (root / "tool-results" / "s2" / "c.txt").write_text("x")
    assert SessionStore(root).delete("s2").removed == (root / "tool-results" / "s2",)


def test_a_delete_that_meets_a_permission_error_finishes_and_reports_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "sessions"
    store, one, two = _legacy_session(root)
    real_unlink = os.unlink

    def unlink(path: str | os.PathLike[str], *args: object, **kwargs: object) -> None:
        if os.fspath(path) in (str(one), one.name):  # shutil.rmtree unlinks by dir_fd + name
            raise PermissionError(13, "Permission denied")
        real_unlink(path, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(os, "unlink", unlink)
    report = store.delete("s1")
    assert not report.complete and len(report.errors) >= 1
    assert "PermissionError" in report.errors[0] and "call_1.txt" in report.errors[0]
    assert one.exists()  # the one entry it could not remove
    assert not two.exists() and not store.exists("s1")  # everything else is gone
    assert not store.session_dir("s1").exists()

"""The per-session read-state map (`tether.tools.exec.read_state`): unchanged re-reads by path,
slice, mtime and size; a change through `write`/`edit` forgets the file; the files read last
for restoration."""

from __future__ import annotations

import os
from pathlib import Path

from tether.compaction.reads import FileRules
from tether.messages import ToolCallBlock, tool_result
from tether.tools.exec.read_state import ReadState


def _read(state: ReadState, cid: str, path: str, **extra: object) -> None:
    call = ToolCallBlock(id=cid, name="read", arguments={"path": path, **extra})
    state.observe(call, tool_result(cid, "text"))


def test_unchanged_re_reads_by_slice_mtime_and_size(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text("one\n")
    state = ReadState(FileRules(root=str(tmp_path)))
    _read(state, "r1", "a.py")
    _read(state, "r2", "./a.py")  # the same file and slice
    _read(state, "r3", "a.py", offset=2)  # another slice: first read of it
    assert state.unchanged == {"r2"}
    (tmp_path / "a.py").write_text("one\ntwo\n")  # changed behind the tools' back
    _read(state, "r4", "a.py")
    st = os.stat(tmp_path / "a.py")
    os.utime(tmp_path / "a.py", ns=(st.st_atime_ns, st.st_mtime_ns))
    _read(state, "r5", "a.py")
    assert state.unchanged == {"r2", "r5"}
    # an edit forgets the file even when mtime and size would not tell
    state.observe(
        ToolCallBlock(id="e1", name="edit", arguments={"path": "a.py"}), tool_result("e1", "ok")
    )
    _read(state, "r6", "a.py")
    assert "r6" not in state.unchanged
    # a failed read records nothing
    state.observe(
        ToolCallBlock(id="r7", name="read", arguments={"path": "a.py"}),
        tool_result("r7", "no", is_error=True),
    )
    assert "r7" not in state.unchanged


def test_recent_paths_newest_first_inside_the_folder(tmp_path: Path) -> None:
    for name in ("a.py", "b.py", "c.py"):
        (tmp_path / name).write_text(name)
    state = ReadState(FileRules(root=str(tmp_path)))
    _read(state, "r1", "a.py")
    _read(state, "r2", "b.py")
    _read(state, "r3", "a.py", offset=3)
    _read(state, "r4", "/etc/hostname")  # outside the working folder
    _read(state, "r5", "c.py")
    assert state.recent_paths(max_files=5) == ("c.py", "a.py", "b.py")
    assert state.recent_paths(max_files=2) == ("c.py", "a.py")


def test_disabled_records_nothing(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text("one\n")
    state = ReadState(FileRules(root=str(tmp_path)), enabled=False)
    _read(state, "r1", "a.py")
    _read(state, "r2", "a.py")
    assert not state.unchanged and state.recent_paths() == ()

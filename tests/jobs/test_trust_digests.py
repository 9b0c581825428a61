"""The project check a worker makes before each run (`tether.settings.trust.check_trust`)
keeps each file's digest while the file's status is unchanged: a file rewritten in place is
still seen as changed (same size, its modification time set back: the status change time
still moved), and a file written just before it was read is not kept (a write in the same
clock tick could not be told apart)."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from tether.settings import trust


def test_a_file_rewritten_in_place_is_seen_as_changed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TETHER_CONFIG_DIR", str(tmp_path / "cfg"))
    monkeypatch.setattr(trust, "_SETTLED_NS", 0)  # keep every digest, however fresh
    root = tmp_path / "proj"
    tool = root / ".tether" / "tools" / "t.py"
    tool.parent.mkdir(parents=True)
    tool.write_text("print('safe')\n")
    trust.approve(root)
    assert trust.check_trust(root).trusted
    assert str(tool.resolve()) in trust._DIGESTS  # pyright: ignore[reportPrivateUsage]
    before = tool.stat()
    time.sleep(0.05)  # the next clock tick
    tool.write_text("print('evil')\n")  # same size
    os.utime(tool, ns=(before.st_atime_ns, before.st_mtime_ns))  # the old modification time
    state = trust.check_trust(root)
    assert state.changes == ((".tether/tools/t.py", "changed"),)


def test_a_file_written_just_now_is_hashed_again_at_the_next_check(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TETHER_CONFIG_DIR", str(tmp_path / "cfg"))
    root = tmp_path / "proj"
    tool = root / ".tether" / "tools" / "t.py"
    tool.parent.mkdir(parents=True)
    tool.write_text("print('safe')\n")
    trust.approve(root)
    assert str(tool.resolve()) not in trust._DIGESTS  # pyright: ignore[reportPrivateUsage]
    tool.write_text("print('evil')\n")  # perhaps within the same clock tick
    assert trust.check_trust(root).changes == ((".tether/tools/t.py", "changed"),)

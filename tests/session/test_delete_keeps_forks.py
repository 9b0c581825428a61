"""Deleting a session never breaks another (trial5, HIGH): `sessions delete OLD` made every
fork of OLD (each rewind, each `/fork`) unloadable. Each fork is first given its own copy of the
history it read from OLD, and of the persisted outputs and images those turns name."""

from __future__ import annotations

import base64
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from kit.cli import run_cli
from kit.sessions import assistant, user
from tether.errors import SessionBusyError
from tether.messages import ImageBlock, TextBlock, ToolResultBlock, Turn
from tether.session import SessionStore

_PNG = base64.b64encode(b"\x89PNG\r\n\x1a\n-fake-image-bytes").decode()


def _parent(store: SessionStore) -> Path:
    """`old`: u1 a1, then a tool result whose stub names a persisted output, an image, a2."""
    out = store.artifact_subdir("old", "tool-results") / "call_1.txt"
    out.write_text("THE FULL OUTPUT")
    stub = f'<persisted-output size_bytes="15" path="{out}">\nTHE\n</persisted-output>'
    with store.create("old", cwd="/w") as w:
        w.append(user("u1", "first prompt"))
        w.append(assistant("a1"))
        w.append(Turn(id="r1", role="user", content=(
            ToolResultBlock(tool_call_id="call_1", content=(TextBlock(text=stub),)),)))
        w.append(Turn(id="i1", role="user", content=(ImageBlock(media_type="image/png", data=_PNG),)))
        w.append(assistant("a2"))
        w.append(user("u9", "after the fork point"))
    return out


def test_delete_gives_each_fork_its_own_copy(store: SessionStore) -> None:
    out = _parent(store)
    with store.create("f", cwd="/w", parent=("old", "a2")) as w:
        w.append(user("f1", "the fork's own"))
    with store.create("g", cwd="/w", parent=("f", "f1")) as w:  # a fork of the fork
        w.append(user("g1"))
    other = store.create("h", cwd="/w", parent=("old", "u1"))
    other.close()
    before = {sid: store.load(sid).turns for sid in ("f", "g", "h")}

    report = store.delete("old")

    assert report.detached == ("f", "h") and not store.exists("old")
    assert not (store.root / "old").exists()
    for sid, turns in before.items():
        loaded = store.load(sid)
        # the same turns, images restored, references now into f's folder
        assert repr(loaded.turns) == repr(turns).replace("old/", "f/"), sid
        assert not loaded.report.skipped
    assert store.load("f").header.parent is None and store.load("g").header.parent == ("f", "f1")
    # the persisted output and the image now live in the fork's own folder
    text = store.path("f").read_text()
    assert str(out) not in text and '"old/images/' not in text
    own = store.root / "f" / "tool-results" / "call_1.txt"
    assert own.read_text() == "THE FULL OUTPUT" and str(own) in text
    assert list((store.root / "f" / "images").iterdir())
    # the fork goes on as before
    with store.open_for_append("f") as w:
        assert w.last_entry_id == "f1"
        w.append(user("f2"))
    assert [t.id for t in store.load("f").turns][-3:] == ["a2", "f1", "f2"]
    assert json.loads(store.path("f").read_text().split("\n")[0])["detached_from"] == ["old", "a2"]


def test_a_fork_being_written_stops_the_delete(store: SessionStore) -> None:
    _parent(store)
    writer = store.create("f", cwd="/w", parent=("old", "a1"))
    try:
        with pytest.raises(SessionBusyError, match="its fork f is being written"):
            store.delete("old")
        assert store.exists("old") and store.load("f").header.parent == ("old", "a1")
    finally:
        writer.close()


def test_a_kill_mid_delete_leaves_every_fork_loadable(store: SessionStore) -> None:
    """The fork's file is replaced atomically: killed before the rename, it is still a fork of
    the parent that still exists; after, it is self-contained."""
    _parent(store)
    store.create("f", cwd="/w", parent=("old", "a2")).close()
    script = (
        "import os, sys\n"
        "import tether.session.detach as st\n"
        "from tether.session import SessionStore\n"
        "def killed(path, data, **kw):\n"
        "    os._exit(9)\n"
        "st.write_atomic = killed\n"
        f"SessionStore({str(store.root)!r}).delete('old')\n"
    )
    run = subprocess.run([sys.executable, "-c", script], check=False)
    assert run.returncode == 9
    assert store.exists("old")
    assert [t.id for t in store.load("f").turns] == ["u1", "a1", "r1", "i1", "a2"]
    store.delete("old")
    assert [t.id for t in store.load("f").turns] == ["u1", "a1", "r1", "i1", "a2"]


def test_sessions_delete_says_which_forks_keep_their_own_copy(tmp_path: Path) -> None:
    home = tmp_path / "home"
    store = SessionStore(home / "sessions")
    _parent(store)
    store.create("rw", cwd=str(tmp_path), parent=("old", "a1")).close()
    done = run_cli(["sessions", "delete", "old"], home, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "deleted old; 1 fork now keeps its own copy: rw" in done.stderr
    shown = run_cli(["sessions", "show", "rw"], home, cwd=tmp_path)
    assert shown.returncode == 0 and "first prompt" in shown.stdout, shown.stderr
    assert os.listdir(home / "sessions" / "rw")  # its folder (writer lock) exists


def test_a_fork_of_a_fork_being_deleted_gets_the_whole_history(store: SessionStore) -> None:
    """Deleting a session that is itself a fork: its forks get the grandparent's part too,
    and a fork whose history did not load already is left as it was and named."""
    _parent(store)
    with store.create("mid", cwd="/w", parent=("old", "a2")) as w:
        w.append(user("m1"))
    with store.create("leaf", cwd="/w", parent=("mid", "m1")) as w:
        w.append(user("l1"))
    with store.create("early", cwd="/w", parent=("mid", "a1")) as w:  # at an inherited entry
        w.append(user("e1"))
    broken = store.create("broken", cwd="/w", parent=("mid", "m1"))
    broken.close()
    path = store.path("broken")
    path.write_bytes(path.read_bytes().replace(b'"parent_entry":"m1"', b'"parent_entry":"zz"'))

    report = store.delete("mid")

    assert report.detached == ("early", "leaf") and report.broken_forks == ("broken",)
    assert [t.id for t in store.load("leaf").turns] == ["u1", "a1", "r1", "i1", "a2", "m1", "l1"]
    assert [t.id for t in store.load("early").turns] == ["u1", "a1", "e1"]
    assert store.exists("old")  # the grandparent is untouched


def test_sessions_delete_refuses_while_a_fork_is_being_written(tmp_path: Path) -> None:
    home = tmp_path / "home"
    store = SessionStore(home / "sessions")
    _parent(store)
    writer = store.create("live", cwd=str(tmp_path), parent=("old", "a1"))
    try:
        out = run_cli(["sessions", "delete", "old"], home, cwd=tmp_path)
    finally:
        writer.close()
    assert out.returncode == 1 and "Traceback" not in out.stderr
    assert out.stderr.strip().splitlines() == [
        "tether: cannot delete old: its fork live is being written by another process "
        "(nothing was deleted)"
    ]
    assert store.exists("old")

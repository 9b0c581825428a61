"""Issue 18 items 18 and 22: invalid UTF-8 in a line costs characters, not the turn; `sessions
list` agrees with a load; a session file appears only with its whole header."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tether.messages import text_turn
from tether.session import SessionStore
from tether.wire import build_view


def _damage(path: Path, needle: bytes, bad: bytes) -> None:
    data = path.read_bytes()
    assert needle in data
    path.write_bytes(data.replace(needle, bad, 1))


def test_invalid_utf8_in_a_line_keeps_the_turn_and_reports_it(tmp_path: Path) -> None:
    store = SessionStore(tmp_path)
    w = store.create(cwd="/")
    w.append(text_turn("u1", "user", "first question"))
    w.append(text_turn("a1", "assistant", "an answer with caf\u00e9 inside"))
    w.append(text_turn("u2", "user", "second question"))
    w.close()
    _damage(w.path, "caf\u00e9".encode(), b"caf\xff\xfe")
    loaded = store.load(w.id)
    assert [t.id for t in loaded.turns] == ["u1", "a1", "u2"]
    assert loaded.turns[1].text == "an answer with caf\ufffd\ufffd inside"
    assert not loaded.report.ok and "salvaged 1" in loaded.report.describe()
    view = build_view(loaded.turns, "anthropic")
    assert [t.role for t in view] == ["user", "assistant", "user"]  # no fused neighbours


@settings(max_examples=40, deadline=None)
@given(st.lists(st.integers(0x80, 0xFF), min_size=1, max_size=4), st.integers(0, 2))
def test_any_invalid_bytes_in_any_text_keep_every_turn(bad: list[int], which: int) -> None:
    import tempfile

    with tempfile.TemporaryDirectory() as d:
        store = SessionStore(Path(d))
        w = store.create(cwd="/")
        texts = ["alpha text", "beta text", "gamma text"]
        for i, t in enumerate(texts):
            w.append(text_turn(f"t{i}", "user" if i % 2 == 0 else "assistant", t))
        w.close()
        _damage(w.path, texts[which].encode(), bytes([0xFF, *bad]))
        loaded = store.load(w.id)
        assert [t.id for t in loaded.turns] == ["t0", "t1", "t2"]
        (info,) = store.list()
        assert info.turn_count == 3


def test_list_agrees_with_load_on_skipped_lines_and_damaged_headers(tmp_path: Path) -> None:
    store = SessionStore(tmp_path)
    w = store.create(cwd="/")
    w.append(text_turn("u1", "user", "question"))
    w.append(text_turn("a1", "assistant", "answer"))
    w.append(text_turn("u2", "user", "again"))
    w.close()
    lines = w.path.read_bytes().split(b"\n")
    lines[2] = lines[2][:20] + b"\x00\x00garbage"  # a turn line that cannot be salvaged
    w.path.write_bytes(b"\n".join(lines))
    loaded = store.load(w.id)
    (info,) = store.list()
    assert info.turn_count == len(loaded.turns) == 2
    assert info.skipped_lines == len(loaded.report.skipped) == 1
    # a damaged header: show/resume load it as a standalone session; list must not call it an error
    data = w.path.read_bytes()
    w.path.write_bytes(b"\x00\x00\x00" + data[data.index(b"\n") :])
    loaded = store.load(w.id)
    (info,) = store.list()
    assert info.error is None and info.turn_count == len(loaded.turns)


KILL_DURING_CREATE = """
import os, signal, sys
from pathlib import Path
from tether.session import SessionStore

real_write = os.write
def write(fd, data):
    os.kill(os.getpid(), signal.SIGKILL)  # die before the header is written
os.write = write
SessionStore(Path(sys.argv[1])).create("s1", cwd="/")
"""


def test_a_kill_while_creating_leaves_no_headerless_file(tmp_path: Path) -> None:
    proc = subprocess.run(
        [sys.executable, "-c", KILL_DURING_CREATE, str(tmp_path)], capture_output=True, timeout=60
    )
    assert proc.returncode == -9
    path = tmp_path / "s1.jsonl"
    assert not path.exists() or json.loads(path.read_bytes().split(b"\n")[0])["id"] == "s1"
    store = SessionStore(tmp_path)
    w = store.create("s1", cwd="/")  # the id is free: no 0-byte file blocks it
    w.close()
    assert store.load("s1").header.id == "s1"
    assert store.list()[0].id == "s1" and len(store.list()) == 1


def test_create_refuses_an_existing_id_and_writes_exactly_the_header(tmp_path: Path) -> None:
    store = SessionStore(tmp_path)
    w = store.create("s1", cwd="/x")
    w.close()
    header = json.loads(w.path.read_text())
    assert header["id"] == "s1" and header["cwd"] == "/x"
    from tether.errors import SessionError

    with pytest.raises(SessionError, match="already exists"):
        store.create("s1", cwd="/")
    assert [p.name for p in tmp_path.iterdir() if p.name.endswith(".tmp")] == []
    assert os.stat(w.path).st_mode & 0o777 == 0o600

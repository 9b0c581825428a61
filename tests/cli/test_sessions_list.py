"""`tether sessions list` (a new user's trial: JSON lines only, every folder's sessions, no
limit, and forks made by rewind listed as `0 turns` with no preview): this folder's sessions by
default (`--all`: every folder's), `--limit N`, a table on a terminal or with `--format table`,
JSON lines otherwise; a fork counts and previews the messages it inherits."""

from __future__ import annotations

import json
from pathlib import Path

from kit.cli import run_cli
from tether.messages import text_turn
from tether.session import SessionStore


def _store(tmp_path: Path) -> tuple[Path, Path, Path]:
    home, here, there = tmp_path / "home", tmp_path / "here", tmp_path / "there"
    here.mkdir()
    there.mkdir()
    store = SessionStore(home / "sessions")
    with store.create("s-here", cwd=str(here)) as w:
        w.append(text_turn("u1", "user", "fix the login"))
        w.append(text_turn("a1", "assistant", "done"))
        w.append(text_turn("u2", "user", "and the logout"))
        w.append(text_turn("a2", "assistant", "done too"))
    with store.create("s-there", cwd=str(there)) as w:
        w.append(text_turn("u1", "user", "elsewhere"))
    with store.create("s-fork", cwd=str(here), parent=("s-here", "a1")):
        pass  # a rewind's fork: its history is the parent's first two messages
    return home, here, there


def test_this_folders_sessions_by_default_all_and_limit(tmp_path: Path) -> None:
    home, here, _ = _store(tmp_path)
    listed = run_cli(["sessions", "list"], home, cwd=here)  # not a terminal: JSON lines
    assert listed.returncode == 0, listed.stderr
    rows = {r["id"]: r for r in map(json.loads, listed.stdout.splitlines())}
    assert set(rows) == {"s-here", "s-fork"}
    assert rows["s-fork"]["turns"] == 2 and rows["s-fork"]["preview"] == "fix the login"
    every = run_cli(["sessions", "list", "--all"], home, cwd=here)
    assert {json.loads(x)["id"] for x in every.stdout.splitlines()} == {
        "s-here", "s-fork", "s-there"}  # fmt: skip
    one = run_cli(["sessions", "list", "--all", "--limit", "1"], home, cwd=here)
    assert len(one.stdout.splitlines()) == 1
    bad = run_cli(["sessions", "list", "--format", "xml"], home, cwd=here)
    assert bad.returncode == 1 and "--format 'xml'" in bad.stderr


def test_the_table_names_the_columns_and_a_forks_parent(tmp_path: Path) -> None:
    home, here, there = _store(tmp_path)
    table = run_cli(["sessions", "list", "--format", "table"], home, cwd=here)
    assert table.returncode == 0, table.stderr
    head, *lines = table.stdout.splitlines()
    assert head.split()[:4] == ["ID", "CHANGED", "MESSAGES", "NAME"] and "FOLDER" not in head
    fork = next(x for x in lines if x.startswith("s-fork"))
    assert " 2 " in fork and "[fork of s-here] fix the login" in fork, fork
    assert not any(x.startswith("s-there") for x in lines)
    every = run_cli(["sessions", "list", "-f", "table", "--all"], home, cwd=here)
    assert "FOLDER" in every.stdout and str(there) in every.stdout
    empty = run_cli(["sessions", "list", "-f", "table"], home, cwd=tmp_path)
    assert empty.returncode == 0 and empty.stdout == "" and "--all" in empty.stderr

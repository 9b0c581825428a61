"""Every `tether sessions` command takes a session's name as well as its id (a new user's
trial: `--name` worked only with `--resume`; `sessions show|export|checkpoints|fork|delete
NAME` said "no session")."""

from __future__ import annotations

import json
from pathlib import Path

from kit.cli import run_cli
from tether.messages import text_turn
from tether.session import SessionStore
from tether.session.names import NAME_EVENT


def test_sessions_commands_find_a_session_by_its_name(tmp_path: Path) -> None:
    home = tmp_path / "home"
    store = SessionStore(home / "sessions")
    with store.create("s-old", cwd=str(tmp_path)) as w:
        w.append(text_turn("u1", "user", "fix the login"))
        w.append(text_turn("a1", "assistant", "done"))
        w.append_event(NAME_EVENT, {"name": "login bug"})
    shown = run_cli(["sessions", "show", "login bug"], home, cwd=tmp_path)
    assert shown.returncode == 0, shown.stderr
    assert "fix the login" in shown.stdout
    out = tmp_path / "s.md"
    exported = run_cli(["sessions", "export", "login bug", "-o", str(out)], home, cwd=tmp_path)
    assert exported.returncode == 0, exported.stderr
    assert "fix the login" in out.read_text()
    listed = run_cli(["sessions", "checkpoints", "login bug"], home, cwd=tmp_path)
    assert listed.returncode == 0, listed.stderr
    forked = run_cli(["sessions", "fork", "login bug"], home, cwd=tmp_path)
    assert forked.returncode == 0, forked.stderr
    missing = run_cli(["sessions", "show", "no such name"], home, cwd=tmp_path)
    assert missing.returncode == 1 and "no such name" in missing.stderr
    deleted = run_cli(["sessions", "delete", "login bug"], home, cwd=tmp_path)
    assert deleted.returncode == 0, deleted.stderr
    assert "s-old" in deleted.stderr  # the id it stood for is named
    assert all(json.loads(line)["id"] != "s-old" for line in
               run_cli(["sessions", "list"], home, cwd=tmp_path).stdout.splitlines())  # fmt: skip

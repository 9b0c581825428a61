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


def test_a_name_another_session_has_is_refused(tmp_path: Path) -> None:
    """The trial's `--name my-sess` twice made two sessions so named, and the older could no
    longer be found by name: the second `--name` (run and chat) is one line, exit 1, nothing
    stored; the session that has it can take it again."""
    from kit.faultserver import FaultServer, text

    home = tmp_path / "home"
    store = SessionStore(home / "sessions")
    with store.create("s-first", cwd=str(tmp_path)) as w:
        w.append(text_turn("u1", "user", "fix the login"))
        w.append_event(NAME_EVENT, {"name": "my-sess"})
    with FaultServer([text("never sent")]) as server:
        model = ["--model", "openai/m", "--base-url", server.openai_url]
        proc = run_cli(["run", *model, "--name", "my-sess", "hi"], home, cwd=tmp_path,
                       OPENAI_API_KEY="sk-test")  # fmt: skip
        assert proc.returncode == 1 and "already named 'my-sess'" in proc.stderr, proc.stderr
        assert "s-first" in proc.stderr and "Traceback" not in proc.stderr
        chat = run_cli(["chat", *model, "--name", "my-sess"], home, cwd=tmp_path)
        assert chat.returncode == 1 and "already named 'my-sess'" in chat.stderr, chat.stderr
        assert server.requests == []
    assert [r.id for r in store.list()] == ["s-first"]
    with FaultServer([text("again")]) as server:
        model = ["--model", "openai/m", "--base-url", server.openai_url]
        proc = run_cli(["run", *model, "--resume", "my-sess", "--name", "my-sess", "go on"],
                       home, cwd=tmp_path, OPENAI_API_KEY="sk-test")  # fmt: skip
        assert proc.returncode == 0, proc.stderr

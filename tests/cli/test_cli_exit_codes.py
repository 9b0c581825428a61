"""Exit codes and refusals of `tether run` that need no model: README's table, checked."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tether.session import SessionStore


def _tether(
    args: list[str], home: Path, stdin: str | None = None
) -> subprocess.CompletedProcess[str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN")
    }
    env["TETHER_HOME"] = str(home)
    return subprocess.run(
        [sys.executable, "-m", "tether.cli", *args],
        cwd=home.parent,
        env=env,
        input=stdin if stdin is not None else "",
        capture_output=True,
        text=True,
        timeout=120,
    )


@pytest.mark.parametrize(
    ("args", "code", "says"),
    [
        (["run", "--bogus"], 1, "No such option"),
        (["run", "--max-turns", "0", "hi"], 1, "max-turns"),
        (["nope"], 1, "No such command"),
        (["run", ""], 1, "empty prompt"),
        (["run", "--resume", "x", "--no-session", "hi"], 1, "cannot be combined"),
        (["run", "--session", "a", "--resume", "b", "hi"], 1, "cannot be combined"),
        (["run", "--model", "nope/x", "hi"], 1, "unknown provider"),
        (["run", "--model", "openai/gpt-4o", "hi"], 2, "OPENAI_API_KEY"),
        (["run", "--model", "anthropic/claude-sonnet-4-5", "hi"], 2, "ANTHROPIC_API_KEY"),
        (["run", "--resume", "missing", "hi"], 1, "no session"),
        (["sessions", "show", "missing"], 1, "no session"),
    ],
)
def test_usage_and_auth_exit_codes(tmp_path: Path, args: list[str], code: int, says: str) -> None:
    home = tmp_path / "home"
    proc = _tether(args, home)
    assert proc.returncode == code, proc.stderr
    assert says in proc.stderr
    assert proc.stdout == ""
    assert not list((home / "sessions").glob("*.jsonl"))  # nothing persisted


def test_a_broken_json_context_exits_5(tmp_path: Path) -> None:
    proc = _tether(["run", "--no-session"], tmp_path / "home", stdin='{"messages": [\n')
    assert proc.returncode == 5 and "malformed input" in proc.stderr


def test_a_session_being_written_elsewhere_is_refused(tmp_path: Path) -> None:
    home = tmp_path / "home"
    store = SessionStore(home / "sessions")
    with store.create("busy", cwd=str(tmp_path)):
        proc = _tether(["run", "--resume", "busy", "hi"], home)
    assert proc.returncode == 1
    assert "being written by another process" in proc.stderr
    assert store.load("busy").turns == ()

"""`!cmd` and `/tasks` in a real terminal: `tether chat` under tmux (send-keys / capture-pane).
`!echo` runs in the sandbox and its output is on screen, no model request is made, and the
session file holds the command and its output as a user message; `/tasks` answers; `/quit`
leaves. The model is a loopback server that must never be asked (`kit.faultserver`)."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from kit.faultserver import FaultServer
from kit.sandbox import sandbox_or_skip
from kit.tmux import Tmux
from kit.waits import wait_until
from tether.session import SessionStore

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed"),
]

tmux = Tmux("tether-bang")
wait_for = tmux.wait_for


def type_line(name: str, text: str) -> None:
    tmux("send-keys", "-t", name, "-l", text)
    tmux("send-keys", "-t", name, "Enter")


def test_bang_and_tasks_in_tmux(tmp_path: Path) -> None:
    sandbox_or_skip()
    work, home = tmp_path / "work", tmp_path / "home"
    work.mkdir()
    name = f"tether-bang-{os.getpid()}"
    with FaultServer([]) as server:
        args = ["--model", "openai/m", "--base-url", server.openai_url, "--cwd", str(work)]
        with tmux.chat(name, args, home=home, OPENAI_API_KEY="sk-test"):
            wait_for(name, "openai/", 120)  # first paint: the footer names the model
            type_line(name, "!echo bang-$((6*7)) && touch from-bang")
            wait_for(name, "bang-42", 60)
            wait_until(lambda: (work / "from-bang").exists(), timeout_s=10)
            type_line(name, "/tasks")
            wait_for(name, "no background shells", 30)
            type_line(name, "/quit")
            wait_until(
                lambda: subprocess.run(
                    ["tmux", "-L", tmux.socket, "has-session", "-t", name], capture_output=True
                ).returncode
                != 0,
                timeout_s=30,
                what="the TUI quit",
            )
        assert server.requests == []  # `!` is no model turn
    store = SessionStore(home / "sessions")
    (info,) = store.list()
    turns = store.load(info.id).turns
    (turn,) = turns
    assert turn.role == "user" and "<bash-input>echo bang-$((6*7))" in turn.text
    assert "bang-42" in turn.text

"""Ctrl+G in a real terminal: `tether chat` under tmux hands the terminal to `$EDITOR` (a script
that prints a line, then rewrites the file), and the prompt holds the edited text once it
exits; nothing is sent to the model (a loopback server that must never be asked)."""

from __future__ import annotations

import os
import shutil
import stat
from pathlib import Path

import pytest

from kit.faultserver import FaultServer
from kit.tmux import Tmux

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed"),
]

tmux = Tmux("tether-editor")
wait_for = tmux.wait_for


def test_ctrl_g_opens_the_editor_and_takes_the_text_back(tmp_path: Path) -> None:
    work, home = tmp_path / "work", tmp_path / "home"
    work.mkdir()
    editor = tmp_path / "editor.sh"
    editor.write_text(
        '#!/bin/sh\necho "the-editor-has-the-terminal: $(cat "$1")"\nsleep 1\n'
        'printf "edited by the script %s" "$((6*7))" > "$1"\n'
    )
    editor.chmod(editor.stat().st_mode | stat.S_IXUSR)
    name = f"tether-editor-{os.getpid()}"
    with FaultServer([]) as server:
        args = ["--model", "openai/m", "--base-url", server.openai_url, "--cwd", str(work)]
        keys = {"OPENAI_API_KEY": "sk-test", "EDITOR": str(editor)}
        with tmux.chat(name, args, home=home, drop=("VISUAL",), **keys):
            wait_for(name, "openai/", 120)  # first paint: the footer names the model
            tmux("send-keys", "-t", name, "-l", "a first draft")
            wait_for(name, "a first draft", 30)
            tmux("send-keys", "-t", name, "C-g")
            wait_for(name, "the-editor-has-the-terminal: a first draft", 30)
            wait_for(name, "edited by the script 42", 30)  # back in the prompt
        assert server.requests == []

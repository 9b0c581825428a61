"""Type-ahead at start (trial4): text typed while `tether chat` starts (10-15 s under load) was
thrown away; Claude Code and Codex keep it. It now appears in the prompt box."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from kit.faultserver import FaultServer, text
from kit.tmux import Tmux

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed"),
]

tmux = Tmux("tether-typeahead")


def test_text_typed_while_the_tui_starts_lands_in_the_prompt(tmp_path: Path) -> None:
    work, home = tmp_path / "work", tmp_path / "home"
    work.mkdir()
    name = f"tether-typeahead-{os.getpid()}"
    with FaultServer([text("hi")]) as server:
        args = ["--model", "openai/m", "--base-url", server.openai_url, "--cwd", str(work)]
        with tmux.chat(name, args, home=home, OPENAI_API_KEY="sk-tmux-test"):
            tmux("send-keys", "-t", name, "-l", "typed early")  # the TUI is not up yet
            tmux.wait_for(name, ("openai/m", "folder"), 60)  # the footer and opening panel
            tmux.wait_for(name, "typed early", 20)

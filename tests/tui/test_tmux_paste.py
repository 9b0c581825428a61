"""A real bracketed paste: tmux's `paste-buffer -p` into `tether chat` sends the paste inside
ESC[200~ … ESC[201~ (Textual turns bracketed paste on). The lines stay in the prompt, nothing is
sent until Enter, and the model then gets them as one message (a loopback server)."""

from __future__ import annotations

import json
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

tmux = Tmux("tether-paste")
PASTED = "alpha line\nbeta line\ngamma line"


def test_a_bracketed_paste_of_three_lines_is_one_message(tmp_path: Path) -> None:
    work, home = tmp_path / "work", tmp_path / "home"
    work.mkdir()
    name = f"tether-paste-{os.getpid()}"
    with FaultServer([text("pasted text received")]) as server:
        args = ["--model", "openai/m", "--base-url", server.openai_url, "--cwd", str(work)]
        with tmux.chat(name, args, home=home, OPENAI_API_KEY="sk-test"):
            tmux.wait_for(name, "openai/", 120)  # first paint: the footer names the model
            tmux("set-buffer", "-b", "tp", PASTED)
            tmux("paste-buffer", "-p", "-b", "tp", "-t", name)  # -p: bracketed, as asked for
            screen = tmux.wait_for(name, ("alpha line", "beta line", "gamma line"), 30)
            lines = screen.splitlines()
            at = next(i for i, line in enumerate(lines) if "alpha line" in line)
            assert "beta line" in lines[at + 1] and "gamma line" in lines[at + 2], screen
            assert server.requests == []  # no newline sent it
            tmux("send-keys", "-t", name, "Enter")
            tmux.wait_for(name, "pasted text received", 60)
    (request,) = server.requests
    said = [m for m in request["body"]["messages"] if m["role"] == "user"]
    content = said[-1]["content"]
    body = content if isinstance(content, str) else "".join(p.get("text", "") for p in content)
    assert body.endswith(PASTED) and body.count("alpha line") == 1, json.dumps(said)

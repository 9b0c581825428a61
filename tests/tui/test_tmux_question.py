"""The question overlay in a real terminal: `tether chat` under tmux, a loopback model that
calls `question`. Enter on an option selects it and sends nothing; Enter on Submit answers."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from kit.faultserver import FaultServer, text, tool
from kit.tmux import Tmux
from kit.waits import wait_until

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed"),
]

tmux = Tmux("tether-question")
QUESTION = {
    "header": "Plan",
    "question": "Which plan?",
    "options": [
        {"label": "small", "description": "one file"},
        {"label": "big", "description": "many files"},
    ],
}


def test_enter_selects_and_submit_answers_in_a_real_terminal(tmp_path: Path) -> None:
    work, home = tmp_path / "work", tmp_path / "home"
    work.mkdir()
    name = f"tether-question-{os.getpid()}"
    script = [tool("question", questions=[QUESTION]), text("going big")]
    with FaultServer(script) as server:
        args = ["--model", "openai/m", "--base-url", server.openai_url, "--cwd", str(work)]
        with tmux.chat(name, args, home=home, OPENAI_API_KEY="sk-test"):
            tmux.wait_for(name, "openai/", 120)  # first paint: the footer names the model
            tmux("send-keys", "-t", name, "-l", "plan it")
            tmux("send-keys", "-t", name, "Enter")
            tmux.wait_for(name, ("Which plan?", "( ) small", "Submit"), 60)
            tmux("send-keys", "-t", name, "Down")
            tmux.wait_for(name, "many files", 30)  # the highlighted option's description
            tmux("send-keys", "-t", name, "Enter")
            tmux.wait_for(name, "(•) big", 30)  # selected, not answered
            assert len(server.requests) == 1
            tmux("send-keys", "-t", name, "Enter")  # the highlight is on Submit
            tmux.wait_for(name, "going big", 60)
            wait_until(lambda: len(server.requests) == 2, timeout_s=10)
    results = [m for m in server.requests[1]["body"]["messages"] if m["role"] == "tool"]
    assert json.loads(results[-1]["content"]) == [{"header": "Plan", "labels": ["big"]}]

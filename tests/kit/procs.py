"""The process table, for tests that a process ended: `marker()` (a number no other process
sleeps for: a test runs `sleep <marker>` and finds its processes by it), `alive` (the live,
not zombie, processes whose command line holds a text) and `left` (wait for them to go; what
is left is killed, so nothing leaks into the suite, and returned)."""

from __future__ import annotations

import itertools
import os
import signal
import time
from pathlib import Path

__all__ = ["alive", "left", "marker"]

_n = itertools.count(1)


def marker() -> str:
    """A sleep duration unique to this test process and call (`sleep <marker>` is ours)."""
    return f"{os.getpid() % 9000 + 1000}{next(_n):04d}"


def alive(text: str, *, comm: str | None = None) -> list[int]:
    """The live (not zombie) processes other than this one whose command line holds `text`
    (and, given `comm`, whose program is that: `sleep` itself, not a shell whose script names
    the marker and whose forked subshells come and go)."""
    out: list[int] = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            cmd = Path(f"/proc/{name}/cmdline").read_bytes().replace(b"\0", b" ").decode()
            stat = Path(f"/proc/{name}/stat").read_text()
        except OSError:
            continue
        program = stat[stat.find("(") + 1 : stat.rfind(")")]
        if comm is not None and program != comm:
            continue
        if text in cmd and ") Z" not in stat and int(name) != os.getpid():
            out.append(int(name))
    return out


def left(text: str, wait_s: float = 10.0) -> list[int]:
    """Wait up to `wait_s` (a loaded 2-core machine: a sandbox's PID namespace can take seconds
    to tear down) for `alive(text)` to be empty; what is left then is killed and returned."""
    found: list[int] = []
    deadline = time.monotonic() + wait_s
    while time.monotonic() < deadline:
        found = alive(text)
        if not found:
            return []
        time.sleep(0.05)
    for pid in found:
        os.kill(pid, signal.SIGKILL)
    return found

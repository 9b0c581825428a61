"""Issue 18 item 19: SIGINT/SIGTERM at any instant of a `tether` process end it with 130 —
the handlers are installed before the CLI loads and are put back after the agent run."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
from pathlib import Path
from types import FrameType

import pytest

from kit.agents import make_agent
from kit.waits import wait_until
from tether.cli import cancel
from tether.cli.run import _drive, _set_handlers  # pyright: ignore[reportPrivateUsage]
from tether.testing import ScriptedProvider


def _caught(pid: int) -> int:
    """The SigCgt mask of a process (signals with a handler)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("SigCgt:"):
            return int(line.split()[1], 16)
    return 0


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_a_signal_during_start_up_exits_130(tmp_path: Path, sig: int) -> None:
    env = {**os.environ, "TETHER_HOME": str(tmp_path / "home")}
    with subprocess.Popen(
        [sys.executable, "-m", "tether.cli", "run"],  # reads the prompt from stdin: blocks
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
        cwd=tmp_path,
    ) as proc:
        try:
            # SIGTERM caught means tether's handlers are in (Python catches SIGINT by itself)
            bit = 1 << (signal.SIGTERM - 1)
            wait_until(lambda: _caught(proc.pid) & bit, timeout_s=30, what="handler installed")
            proc.send_signal(sig)
            assert proc.wait(timeout=30) == 130
            assert proc.stderr is not None
            assert proc.stderr.read().decode().splitlines()[-1:] == ["tether: cancelled"]
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()


def test_after_the_run_a_signal_is_recorded_then_the_handlers_are_put_back(
    tmp_path: Path,
) -> None:
    """While the run closes (the event loop, the session writer) a signal is only recorded
    (the process exits 130 at the end: `tether.cli.entry.leave`), never raised in the middle
    of it; `run_command` then puts the CLI's handlers back."""
    seen: list[int] = []

    def mine(signum: int, frame: FrameType | None) -> None:
        seen.append(signum)

    old = {s: signal.signal(s, mine) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        agent = make_agent(ScriptedProvider(["the answer"]), tmp_path)
        assert asyncio.run(_drive(agent, "hi")) == 0
        os.kill(os.getpid(), signal.SIGTERM)  # recorded, not raised
        assert cancel.received() and seen == []
        _set_handlers(dict.fromkeys(old, mine))
        assert signal.getsignal(signal.SIGTERM) is mine
        assert signal.getsignal(signal.SIGINT) is mine
    finally:
        for s, h in old.items():
            signal.signal(s, h)

"""A child process paused at a named point, then signalled: the signal tests' harness.

`signal_at(child, point, marks, args, ...)` starts `python -c child point marks *args` (the
child script touches `marks/paused` when it reaches `point` and waits for `marks/sent`), waits
until it paused, sends `sig`, lets it go on and returns its exit code, stdout and stderr (the
child killed if it is still running at the end)."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path

from kit.waits import wait_until

PAUSE = r"""
import sys, time
from pathlib import Path

point, marks = sys.argv[1], Path(sys.argv[2])

def pause():
    (marks / "paused").touch()
    while not (marks / "sent").exists():  # each stat() returns to user space: the signal lands
        time.sleep(0.002)
"""
"""The child script's opening: its `point` and `marks` arguments and `pause()`, which touches
`marks/paused` and waits for `marks/sent` (the script goes on to call `pause()` at `point`)."""


def signal_at(
    child: str,
    point: str,
    marks: Path,
    args: list[str],
    *,
    cwd: Path,
    env: Mapping[str, str],
    sig: int,
    stdin: int | None = None,
) -> tuple[int, str, str]:
    """Run `child` paused at `point`, send `sig`, and return (exit code, stdout, stderr)."""
    with subprocess.Popen(
        [sys.executable, "-c", child, point, str(marks), *args],
        cwd=cwd,
        env=dict(env),
        stdin=stdin,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    ) as proc:
        try:
            wait_until(
                lambda: (marks / "paused").exists() or proc.poll() is not None,
                timeout_s=60,
                what=f"the child paused at {point}",
            )
            assert proc.poll() is None, proc.stderr.read() if proc.stderr else ""
            proc.send_signal(sig)
            (marks / "sent").touch()
            out, errs = proc.communicate(timeout=60)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    return proc.returncode, out, errs

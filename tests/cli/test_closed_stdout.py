"""Every command's stdout closed before it writes (`tether sessions list | head -1` once
`head` has gone): one `stdout closed: …` line on stderr and exit 0, as `tether run`'s event
stream does, never a silent exit 1 (click's own handling) or a traceback. Real processes: the
closed pipe is the point."""

from __future__ import annotations

from pathlib import Path

import pytest

from kit.cli import popen, run_cli
from kit.faultserver import FaultServer, text


@pytest.mark.parametrize("args", [["config", "show"], ["models"], ["sessions", "list"]])
def test_a_closed_stdout_is_one_line_and_exit_0(tmp_path: Path, args: list[str]) -> None:
    home = tmp_path / "home"
    with FaultServer([text("hello")]) as server:  # a session for `sessions list` to show
        made = run_cli(
            ["run", "--model", "openai/m", "--base-url", server.openai_url, "hi"],
            home,
            OPENAI_API_KEY="sk-test",
        )
    assert made.returncode == 0, made.stderr
    proc = popen(args, home, capture=True)
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.close()  # the reader is gone before the command writes a byte
    code = proc.wait(timeout=60)
    err = proc.stderr.read()
    proc.stderr.close()
    assert "Traceback" not in err, err
    closed = [x for x in err.splitlines() if x.startswith("tether: stdout closed: ")]
    assert len(closed) == 1, err
    assert code == 0, err

"""SIGINT / SIGTERM while a run closes end the process with 130 and no traceback (issue 39,
instrument findings 1 and 2; docs/cli.md: 130 "at any instant, closing included").

Real `tether run` processes against a loopback model server (`kit.faultserver`). The child
pauses at one instant of the run's close (a hook wrapped around the code running there: the
final answer written to the session, the final `turn_end` or `done` event written to stdout,
the session writer closed, the entry point reading the CLI's exit code) and tells the test;
the test sends the signal, then lets the child go on. The signal has reached the child's
handler before it goes on (the kernel delivers it when the child returns from the `stat` it
polls with), so each instant is hit every time, not by timing.

Without the fixes: a signal during the final answer's write or right after `turn_end` / `done`
was swallowed (exit 0: the event loop's handler, removed as the run closed, had not yet read
the signal from its self-pipe); one during the exit-code step escaped `tether.cli.entry` as a
`KeyboardInterrupt` traceback and death by SIGINT (-2).
"""

from __future__ import annotations

import signal
from pathlib import Path

import pytest

from kit.cli import cli_env
from kit.faultserver import FaultServer, text
from kit.paused import PAUSE, signal_at

CHILD = PAUSE + r"""
import functools, os

def around(owner, name, when):
    original = getattr(owner, name)

    @functools.wraps(original)
    def wrapper(*args, **kwargs):
        hit = when(*args, **kwargs) and not (marks / "paused").exists()
        if hit and point.endswith("before"):
            pause()
        result = original(*args, **kwargs)
        if hit and not point.endswith("before"):
            pause()
        return result

    setattr(owner, name, wrapper)

from tether.cli import entry
from tether.cli.formats import OutputSink
from tether.session import SessionWriter

def final_answer(self, turn):
    return turn.role == "assistant" and turn.text == "the answer"

def event(kind):
    return lambda self, e: type(e).__name__ == kind

if point.startswith("answer"):
    around(SessionWriter, "append", final_answer)
elif point == "turn_end":
    around(OutputSink, "__call__", event("TurnEndEvent"))
elif point == "done":
    around(OutputSink, "__call__", event("DoneEvent"))
elif point == "writer_close":
    around(SessionWriter, "close", lambda self: True)
elif point == "exit_code":
    around(entry, "_exit_code", lambda code: True)

sys.argv = ["tether", *sys.argv[3:]]
entry.main()
"""

POINTS = ["answer_before", "answer_after", "turn_end", "done", "writer_close", "exit_code"]


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["INT", "TERM"])
@pytest.mark.parametrize("point", POINTS)
def test_a_signal_while_the_run_closes_exits_130(tmp_path: Path, point: str, sig: int) -> None:
    home, work, marks = tmp_path / "home", tmp_path / "work", tmp_path / "marks"
    work.mkdir()
    marks.mkdir()
    with FaultServer([text("the answer")]) as server:
        args = ["run", "--model", "openai/m", "--base-url", server.openai_url]
        args += ["--output-format", "stream-json", "hi"]
        code, out, errs = signal_at(
            CHILD, point, marks, args, cwd=work, env=cli_env(home), sig=sig
        )
    assert code == 130, (out, errs)
    assert "Traceback" not in errs and "KeyboardInterrupt" not in errs, errs
    assert "cancelled" in errs

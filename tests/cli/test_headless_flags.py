"""`tether run --tools` and `--timeout` (issue 39, audit row 4: headless runs could not be
narrowed or time-limited from the command line)."""

from __future__ import annotations

import time
from pathlib import Path

from kit.cli import Completed, run_cli
from kit.faultserver import FaultServer, text, tool
from tether.agent.sessions import CANCELLED_RUNNING
from tether.session import SessionStore


def _run(server: FaultServer, home: Path, *args: str) -> Completed:
    return run_cli(
        ["run", "--model", "openai/m", "--base-url", server.openai_url, *args],
        home,
        OPENAI_API_KEY="sk-test",
    )


def test_tools_offers_only_the_named_tools(tmp_path: Path) -> None:
    home = tmp_path / "home"
    with FaultServer([text("ok")]) as server:
        proc = _run(server, home, "--no-session", "--tools", "read, grep", "hi")
        assert proc.returncode == 0, proc.stderr
        offered = {t["function"]["name"] for t in server.requests[0]["body"]["tools"]}
    assert offered == {"read", "grep"}
    with FaultServer([text("never sent")]) as server:
        for bad in ("nosuch", " , "):
            proc = _run(server, home, "--no-session", "--tools", bad, "hi")
            assert proc.returncode == 1 and "Traceback" not in proc.stderr, proc.stderr
            assert len(proc.stderr.strip().splitlines()) <= 2, proc.stderr  # + the sandbox note
        assert server.requests == []


def test_timeout_stops_the_whole_run_with_124_and_keeps_the_partial_turn(tmp_path: Path) -> None:
    home = tmp_path / "home"
    with FaultServer([tool("bash", command="sleep 30"), text("never sent")]) as server:
        start = time.monotonic()
        proc = _run(server, home, "--session", "t1", "--timeout", "1.5", "sleep please")
        took = time.monotonic() - start
    assert proc.returncode == 124, proc.stderr
    assert "--timeout" in proc.stderr and took < 20
    turns = SessionStore(home / "sessions").load("t1").turns
    assert [t.role for t in turns] == ["user", "assistant", "user"], proc.stderr + proc.stdout
    (result,) = turns[-1].tool_results
    assert result.is_error and result.text == CANCELLED_RUNNING
    with FaultServer([text("never sent")]) as server:
        bad = _run(server, home, "--no-session", "--timeout", "soon", "hi")
        huge = _run(server, home, "--no-session", "--timeout", "9" * 20, "hi")
        assert server.requests == []
    for proc in (bad, huge):
        assert proc.returncode == 1 and "Traceback" not in proc.stderr, proc.stderr
        # the flag's unit is seconds: the line says so, not the settings' milliseconds
        assert "give seconds (600)" in proc.stderr and "milliseconds" not in proc.stderr


def test_safe_with_tools_that_safe_mode_never_runs_is_refused(tmp_path: Path) -> None:
    """The trial's `--safe --tools bash` ran with no usable tool, and `--tools nosuch` named
    the setting `tools.only`: both are one line naming the flags, exit 1, nothing sent."""
    home = tmp_path / "home"
    with FaultServer([text("never sent")]) as server:
        proc = _run(server, home, "--no-session", "--safe", "--tools", "read,bash", "hi")
        assert proc.returncode == 1, proc.stderr
        assert "--safe" in proc.stderr and "--tools names bash" in proc.stderr, proc.stderr
        proc = _run(server, home, "--no-session", "--tools", "nosuch", "hi")
        assert proc.returncode == 1 and "unknown tools in --tools: nosuch" in proc.stderr
        assert server.requests == []
    with FaultServer([text("ok")]) as server:  # read-only tools go with --safe
        proc = _run(server, home, "--no-session", "--safe", "--tools", "read,grep", "hi")
        assert proc.returncode == 0, proc.stderr


def test_plan_mode_says_where_the_plan_is_in_each_format(tmp_path: Path) -> None:
    """The trial's `--plan --output-format text` pointed at "the `plan` event", which text
    output has not: the plan is the answer there."""
    home = tmp_path / "home"
    with FaultServer([text("1. read\n2. write"), text("1. read\n2. write")]) as server:
        shown = _run(server, home, "--no-session", "--plan", "--output-format", "text", "go")
        events = _run(server, home, "--no-session", "--plan", "go")
    assert shown.returncode == 0 and "1. read" in shown.stdout, shown.stderr
    assert "the plan is the answer" in shown.stderr and "`plan` event" not in shown.stderr
    assert events.returncode == 0 and "the plan is the `plan` event" in events.stderr

"""`--effort`: the level reaches the request (`reasoning_effort` on Chat Completions), a
resumed session keeps it unless the flag changes it, a bad level is one line and exit 1, and a
model that does not reason gets one line and no field."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from kit.cli import Completed, run_cli
from kit.faultserver import FaultServer, text


def run(server: FaultServer, home: Path, work: Path, *args: str, model: str = "openai/o3") -> Completed:
    return run_cli(
        ["run", "--model", model, "--base-url", server.openai_url, *args], home, cwd=work
    )


def effort_of(request: dict[str, Any]) -> object:
    return request["body"].get("reasoning_effort")


def test_effort_reaches_the_request_and_a_resume_keeps_it(tmp_path: Path) -> None:
    home, work = tmp_path / "home", tmp_path / "work"
    work.mkdir()
    with FaultServer([text("a"), text("b"), text("c"), text("d")]) as server:
        first = run(server, home, work, "--session", "s1", "--effort", "high", "one")
        kept = run(server, home, work, "--resume", "s1", "two")
        changed = run(server, home, work, "--resume", "s1", "--effort", "low", "three")
        again = run(server, home, work, "--resume", "s1", "four")
        requests = server.requests
    for proc in (first, kept, changed, again):
        assert proc.returncode == 0, proc.stderr
    assert [effort_of(r) for r in requests] == ["high", "high", "low", "low"]


def test_no_effort_sends_no_field(tmp_path: Path) -> None:
    home, work = tmp_path / "home", tmp_path / "work"
    work.mkdir()
    with FaultServer([text("a")]) as server:
        proc = run(server, home, work, "--no-session", "one")
        (request,) = server.requests
    assert proc.returncode == 0, proc.stderr
    assert "reasoning_effort" not in request["body"]


def test_a_bad_level_is_one_line_and_exit_1(tmp_path: Path) -> None:
    home, work = tmp_path / "home", tmp_path / "work"
    work.mkdir()
    with FaultServer([]) as server:
        proc = run(server, home, work, "--effort", "extreme", "one")
        assert server.requests == []
    assert proc.returncode == 1
    lines = proc.stderr.strip().splitlines()
    assert lines == ["tether: --effort 'extreme': give one of low, medium, high, max"] or (
        len(lines) == 1 and "--effort 'extreme'" in lines[0]
    ), proc.stderr
    assert "Traceback" not in proc.stderr


def test_a_model_without_reasoning_says_so_and_gets_no_field(tmp_path: Path) -> None:
    home, work = tmp_path / "home", tmp_path / "work"
    work.mkdir()
    with FaultServer([text("a")]) as server:
        proc = run(server, home, work, "--no-session", "--effort", "max", "one", model="openai/gpt-4o")
        (request,) = server.requests
    assert proc.returncode == 0, proc.stderr
    assert "reasoning_effort" not in request["body"]
    notes = [line for line in proc.stderr.splitlines() if "no reasoning" in line]
    assert len(notes) == 1 and "gpt-4o" in notes[0], proc.stderr

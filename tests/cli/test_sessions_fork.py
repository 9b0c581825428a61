"""`tether sessions fork ID [--before N]`, and the runaway guard's stop line pointing at it
(issue 39, instrument finding 5: a session whose last user message is too large for the
window could never be resumed: each `--resume` compacted once and stopped)."""

from __future__ import annotations

import json
from pathlib import Path

from kit.cli import Completed, run_cli
from kit.faultserver import FaultServer, text
from tether.session import SessionStore


def _run(server: FaultServer, home: Path, *args: str) -> Completed:
    return run_cli(
        ["run", "--model", "openai/m", "--base-url", server.openai_url, *args],
        home,
        OPENAI_API_KEY="sk-test",
    )


def _texts(home: Path, sid: str) -> list[str]:
    return [t.text for t in SessionStore(home / "sessions").load(sid).turns]


def test_fork_before_a_message_too_large_lets_the_session_go_on(tmp_path: Path) -> None:
    home = tmp_path / "home"
    big = "lorem ipsum dolor sit amet " * 600  # ~4000 tokens: over 0.4 of an 8000-token window
    script = [text("first answer"), text("a summary"), text("second answer")]
    with FaultServer(script) as server:
        first = _run(server, home, "--session", "s1", "--context-window", "8000", "hi")
        assert first.returncode == 0, first.stderr
        stuck = _run(server, home, "--resume", "s1", "--context-window", "8000", big)
        assert stuck.returncode == 4, stuck.stderr
        assert "tether sessions fork s1 --before 2" in stuck.stderr
        assert len(server.requests) == 2  # the answer, then the one compaction a resume tries

        forked = run_cli(["sessions", "fork", "s1", "--before", "2"], home)
        assert forked.returncode == 0, forked.stderr
        row = json.loads(forked.stdout)
        assert row["parent"] == "s1" and row["before"] == 2 and row["turns"] == 2
        new = row["session"]
        assert _texts(home, new) == ["hi", "first answer"]
        assert "tether run --resume " + new in forked.stderr

        on = _run(server, home, "--resume", new, "--context-window", "8000", "go on")
        assert on.returncode == 0, on.stderr
        assert _texts(home, new) == ["hi", "first answer", "go on", "second answer"]
    assert any(big.strip() in t for t in _texts(home, "s1"))  # the original keeps it


def test_fork_without_before_copies_and_out_of_range_is_one_line(tmp_path: Path) -> None:
    home = tmp_path / "home"
    with FaultServer([text("answer")]) as server:
        assert _run(server, home, "--session", "s2", "hi").returncode == 0
    whole = run_cli(["sessions", "fork", "s2"], home)
    assert whole.returncode == 0, whole.stderr
    assert _texts(home, json.loads(whole.stdout)["session"]) == ["hi", "answer"]
    for n in ("0", "2"):
        bad = run_cli(["sessions", "fork", "s2", "--before", n], home)
        assert bad.returncode == 1 and bad.stdout == ""
        assert bad.stderr.strip() == (
            f"tether: --before {n} is outside session s2's user messages (1..1)"
        )
    missing = run_cli(["sessions", "fork", "nosuch"], home)
    assert missing.returncode == 1 and "Traceback" not in missing.stderr

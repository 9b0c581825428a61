"""`tether run --output-schema FILE` and `--max-tool-calls N` against a loopback server
(issue 39, audit rows 5 and 4)."""

from __future__ import annotations

import json
from pathlib import Path

from kit.cli import Completed, run_cli
from kit.faultserver import FaultServer, text, tool

SCHEMA = {
    "type": "object",
    "properties": {"city": {"type": "string"}},
    "required": ["city"],
}


def _run(server: FaultServer, home: Path, *args: str) -> Completed:
    return run_cli(
        ["run", "--model", "openai/m", "--base-url", server.openai_url, "--no-session", *args],
        home,
        OPENAI_API_KEY="sk-test",
    )


def _schema_file(tmp_path: Path) -> str:
    path = tmp_path / "schema.json"
    path.write_text(json.dumps(SCHEMA))
    return str(path)


def test_json_output_carries_the_parsed_answer_after_one_retry(tmp_path: Path) -> None:
    home, schema = tmp_path / "home", _schema_file(tmp_path)
    with FaultServer([text("Paris"), text('{"city": "Paris"}')]) as server:
        proc = _run(server, home, "--output-schema", schema, "--output-format", "json", "where?")
        asked = server.requests[1]["body"]["messages"][-1]["content"]
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout)
    assert result["structured"] == {"city": "Paris"} and result["stop_reason"] == "end_turn"
    assert "not JSON" in json.dumps(asked)


def test_stream_json_done_carries_it_and_an_inline_schema_works(tmp_path: Path) -> None:
    home = tmp_path / "home"
    with FaultServer([text('{"city": "Oslo"}')]) as server:
        proc = _run(server, home, "--output-schema", json.dumps(SCHEMA), "where?")
    assert proc.returncode == 0, proc.stderr
    done = [json.loads(x) for x in proc.stdout.splitlines() if '"type":"done"' in x]
    assert done[-1]["structured"] == {"city": "Oslo"}


def test_an_answer_that_never_validates_exits_1_with_one_line(tmp_path: Path) -> None:
    home, schema = tmp_path / "home", _schema_file(tmp_path)
    with FaultServer([text("a"), text("[]"), text('{"town": 1}')]) as server:
        proc = _run(server, home, "--output-schema", schema, "--output-format", "json", "where?")
        sent = len(server.requests)
    assert proc.returncode == 1, proc.stderr
    assert sent == 3  # the answer, then run.output_schema_retries (2) more
    stops = [x for x in proc.stderr.splitlines() if x.startswith("tether: stopped:")]
    assert len(stops) == 1 and "--output-schema" in stops[0] and "'city'" in stops[0]
    result = json.loads(proc.stdout)
    assert result["stop_reason"] == "schema_invalid" and result["structured"] is None


def test_a_bad_schema_is_refused_before_any_request(tmp_path: Path) -> None:
    home = tmp_path / "home"
    bad = tmp_path / "bad.json"
    bad.write_text('{"type": 5}')
    with FaultServer([text("never sent")]) as server:
        for value in (str(bad), str(tmp_path / "missing.json"), "{not json"):
            proc = _run(server, home, "--output-schema", value, "hi")
            assert proc.returncode == 1 and "Traceback" not in proc.stderr, proc.stderr
            # one line alone: the trial's came after the context and window notes
            assert len(proc.stderr.strip().splitlines()) == 1 and "schema" in proc.stderr, proc.stderr
        assert server.requests == []


def test_max_tool_calls_stops_before_the_call_that_would_pass_it(tmp_path: Path) -> None:
    home = tmp_path / "home"
    work = home.parent / "work"
    work.mkdir(parents=True, exist_ok=True)
    (work / "a.txt").write_text("hello\n")
    steps = [tool("read", path="a.txt"), tool("read", path="a.txt"), text("never sent")]
    with FaultServer(steps) as server:
        proc = _run(server, home, "--max-tool-calls", "1", "read twice")
        sent = len(server.requests)
    assert proc.returncode == 1, proc.stderr
    assert sent == 2
    assert "--max-tool-calls reached (1 call)" in proc.stderr
    events = [json.loads(x) for x in proc.stdout.splitlines()]
    assert [e["stop_reason"] for e in events if e["type"] == "done"] == ["max_tool_calls"]
    results = [e for e in events if e["type"] == "tool_result"]
    assert len(results) == 1  # the second call never ran


def test_the_first_request_already_names_the_schema(tmp_path: Path) -> None:
    """trial5: the model learned the schema only from the rejection (a failed answer and a
    retry per run); now the system prompt of every request names it (OpenAI and Anthropic)."""
    home, schema = tmp_path / "home", _schema_file(tmp_path)
    with FaultServer([tool("bash", command="echo hi"), text('{"city": "Oslo"}')]) as server:
        proc = _run(server, home, "--output-schema", schema, "--output-format", "json", "where?")
        bodies = [r["body"] for r in server.requests]
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["structured"] == {"city": "Oslo"}
    for body in bodies:
        system = body["messages"][0]
        assert system["role"] == "system" and '"required":["city"]' in system["content"]
        assert "Output format:" in system["content"]
    with FaultServer([text('{"city": "Oslo"}')]) as server:
        proc = run_cli(
            ["run", "--model", "anthropic/m", "--base-url", server.anthropic_url, "--no-session",
             "--output-schema", schema, "--output-format", "json", "where?"],
            home,
            ANTHROPIC_API_KEY="sk-test",
        )
        [body] = [r["body"] for r in server.requests]
    assert proc.returncode == 0, proc.stderr
    system = body["system"]
    assert '"required":["city"]' in (system if isinstance(system, str) else str(system))

"""`tether run`'s JSONL stream carries `tool_start` between a call's `tool_call` and its
`tool_result` (issue 39)."""

from __future__ import annotations

from pathlib import Path

from kit.cli import run_cli
from kit.events import jsonl
from kit.faultserver import FaultServer, text, tool


def test_the_stream_says_when_a_call_starts(tmp_path: Path) -> None:
    home = tmp_path / "home"
    with FaultServer([tool("read", path="nothing-here.txt"), text("none")]) as server:
        proc = run_cli(
            [
                "run",
                "--model",
                "openai/m",
                "--base-url",
                server.openai_url,
                "--no-session",
                "--output-format",
                "stream-json",
                "read it",
            ],
            home,
            OPENAI_API_KEY="sk-test",
        )
    assert proc.returncode == 0, proc.stderr
    kinds = [
        e for e in jsonl(proc.stdout) if e["type"] in ("tool_call", "tool_start", "tool_result")
    ]
    assert [e["type"] for e in kinds] == ["tool_call", "tool_start", "tool_result"]
    call, start, _ = kinds
    assert start == {"type": "tool_start", "tool_call_id": call["id"], "name": "read"}

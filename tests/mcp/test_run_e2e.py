"""End to end: `tether run` (in process) with a scripted loopback model (`FaultServer`, OpenAI
Chat Completions SSE) whose agent calls tools of a stdio MCP server configured in the project
settings: the results come back to the model, the server runs sandboxed (a write outside the
working folder is refused), a large result goes through the persisted-output gate, and the
server's stderr lands in the session's `mcp-warnings/`."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from kit.cli import Completed, run_cli, tether
from kit.faultserver import FaultServer, text, tool
from kit.mcp import DEMO
from tether.sandbox.detect import detect_sandbox

pytestmark = [
    pytest.mark.timeout(180),
    pytest.mark.skipif(detect_sandbox() is None, reason="no OS sandbox on this machine"),
]


def tool_results(body: dict[str, Any]) -> list[str]:
    return [m["content"] for m in body["messages"] if m["role"] == "tool"]


def run(tmp_path: Path, root: Path, server: FaultServer, *args: str) -> Completed:
    """`tether run` in `root` (in process), after the user approved the project's settings
    (`tether trust`: project settings that start MCP servers are loaded only once approved)."""
    home, key = tmp_path / "home", {"OPENAI_API_KEY": "sk-test-key-e2e"}
    approved = run_cli(["trust"], home, cwd=root, **key)
    assert approved.returncode == 0, approved.stderr
    cmd = ["run", "-m", "openai/m", "--base-url", server.openai_url, "--max-turns", "8"]
    return run_cli([*cmd, *args, "go"], home, cwd=root, **key)


def test_tether_run_calls_a_sandboxed_mcp_tool(tmp_path: Path) -> None:
    root = tmp_path / "work"
    (root / ".tether").mkdir(parents=True)
    settings = {
        "mcp": {"servers": {"demo": {"command": sys.executable, "args": [str(DEMO)]}}},
        "tools": {"output_threshold_chars": 5000},
    }
    (root / ".tether" / "settings.json").write_text(json.dumps(settings))
    outside = tmp_path / "outside.txt"
    home_file = Path.home() / f".tether-mcp-e2e-{tmp_path.name}"
    script = [
        tool("mcp__demo__write_file", path="note.txt", text="from mcp"),
        tool("mcp__demo__write_file", path=str(outside), text="escape"),
        tool("mcp__demo__write_file", path=str(home_file), text="escape"),
        tool("mcp__demo__env_value", var="OPENAI_API_KEY"),
        tool("mcp__demo__big", n=2000),
        text("all done"),
    ]
    with FaultServer(script) as server:
        proc = run(tmp_path, root, server, "--session", "mcp-e2e")
    assert proc.returncode == 0, proc.stderr
    bodies = [r["body"] for r in server.requests]
    offered = [t["function"]["name"] for t in bodies[0]["tools"]]
    assert "mcp__demo__write_file" in offered and "mcp_read_resource" in offered
    results = tool_results(bodies[-1])
    assert results[0] == "wrote note.txt"
    assert not outside.exists()  # under /tmp: the sandbox's private temp folder took it
    assert results[2].startswith("refused") and not home_file.exists()
    assert results[3] == "<unset>"  # the provider key is not the server's
    assert results[4].startswith("<persisted-output") and len(results[4]) < 5000
    assert (root / "note.txt").read_text() == "from mcp"
    assert not outside.exists()
    session_dir = next((tmp_path / "home" / "sessions").rglob("mcp-warnings")).parent
    assert "demo server starting" in (session_dir / "mcp-warnings" / "demo.log").read_text()
    saved = list((session_dir / "tool-results").glob("*.txt"))
    assert len(saved) == 1 and "line 1999 of the big output" in saved[0].read_text()
    events = [json.loads(line) for line in proc.stdout.splitlines()]
    assert [e for e in events if e["type"] == "warning"] == []


def test_tether_run_warns_about_a_server_that_fails(tmp_path: Path) -> None:
    root = tmp_path / "work"
    (root / ".tether").mkdir(parents=True)
    settings = {"mcp": {"servers": {"broken": {"command": "/nonexistent/server"}}}}
    (root / ".tether" / "settings.json").write_text(json.dumps(settings))
    with FaultServer([text("fine")]) as server:
        proc = run(tmp_path, root, server, "--no-session")
    assert proc.returncode == 0, proc.stderr
    events = [json.loads(line) for line in proc.stdout.splitlines()]
    warnings = [e for e in events if e["type"] == "warning"]
    assert [w["kind"] for w in warnings] == ["mcp_server_failed"]
    assert "`broken`" in warnings[0]["message"]


def test_a_server_that_prints_a_banner_on_stdout_is_one_warning_line(tmp_path: Path) -> None:
    """A stdio server whose stdout starts with a banner (not JSON-RPC): the SDK skips the line
    and logged a 12-line traceback on stderr; now one warning names the server and the line,
    and the call works (trial4)."""
    root = tmp_path / "work"
    (root / ".tether").mkdir(parents=True)
    noisy = {
        "command": sys.executable,
        "args": [str(DEMO)],
        "env": {"BANNER": "starting noisy server"},
        "startup_timeout": "60s",
    }
    (root / ".tether" / "settings.json").write_text(
        json.dumps({"mcp": {"servers": {"noisy": noisy}}})
    )
    script = [tool("mcp__noisy__env_value", var="HOME"), text("done")]
    home, key = tmp_path / "home", {"OPENAI_API_KEY": "sk-test-key-e2e"}
    assert run_cli(["trust"], home, cwd=root, **key).returncode == 0
    with FaultServer(script) as server:
        # a process of its own: what the SDK's logging prints there is the point
        cmd = ["run", "-m", "openai/m", "--base-url", server.openai_url, "--no-session", "go"]
        proc = tether(cmd, home, cwd=root, timeout=150, **key)
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr and "pydantic" not in proc.stderr, proc.stderr
    said = [line for line in proc.stderr.splitlines() if "non-JSON" in line]
    assert len(said) == 1, proc.stderr
    assert "MCP server noisy" in said[0] and "'starting noisy server'" in said[0]
    events = [json.loads(line) for line in proc.stdout.splitlines()]
    assert [e["kind"] for e in events if e["type"] == "warning"] == ["mcp_server_noisy"]
    assert tool_results(server.requests[-1]["body"]) != []

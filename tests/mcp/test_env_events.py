"""Environment lifecycle events (issue 39, audit row "environment lifecycle events", ✗ before):
`env` events, apart from the turn events, say when the sandbox is ready and when an MCP server
comes up (with its tools), fails to start, or is stopped; `tether run` writes them to its JSONL
stream."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from kit.agents import make_agent
from kit.cli import run_cli
from kit.events import jsonl
from kit.faultserver import FaultServer, text
from kit.mcp import stdio_settings
from tether.agent.events import AgentEvent, EnvEvent, SessionStartEvent, event_to_dict
from tether.sandbox.detect import detect_sandbox
from tether.testing import ScriptedProvider

pytestmark = [
    pytest.mark.timeout(180),
    pytest.mark.skipif(detect_sandbox() is None, reason="no OS sandbox on this machine"),
]


def _servers(tmp_path: Path) -> dict[str, Any]:
    marks = tmp_path / "work" / "marks"
    marks.mkdir(parents=True, exist_ok=True)
    demo = stdio_settings(marks).model_dump(mode="json", exclude_unset=True)
    broken = {"command": "/nonexistent/mcp-server"}
    return {"demo": demo, "broken": broken}


def _env(events: list[AgentEvent]) -> list[tuple[str, str, str]]:
    return [(e.what, e.name, e.state) for e in events if isinstance(e, EnvEvent)]


def test_sandbox_ready_servers_up_down_and_stopped(tmp_path: Path) -> None:
    events: list[AgentEvent] = []
    root = tmp_path / "work"
    agent = make_agent(
        ScriptedProvider(["hi"]),
        root,
        settings={"mcp": {"servers": _servers(tmp_path)}},
        events=events,
    )
    agent.run_sync("hello")
    sandbox = detect_sandbox()
    assert sandbox is not None
    assert _env(events) == [
        ("mcp_server", "demo", "up"),
        ("mcp_server", "broken", "down"),
        ("sandbox", sandbox.kind, "ready"),
        ("mcp_server", "demo", "down"),  # run_sync stops the servers when it returns
    ]
    up = next(e for e in events if isinstance(e, EnvEvent) and e.state == "up")
    assert up.detail.endswith(" tools") and int(up.detail.split()[0]) > 0
    down = next(e for e in events if isinstance(e, EnvEvent) and e.name == "broken")
    assert "broken" in down.detail
    # the servers start before the session; the sandbox is announced right after it
    first_session = next(i for i, e in enumerate(events) if isinstance(e, SessionStartEvent))
    assert events[first_session + 1] == EnvEvent(what="sandbox", name=sandbox.kind, state="ready")
    assert event_to_dict(up)["type"] == "env"


def test_the_cli_stream_carries_them(tmp_path: Path) -> None:
    home, config = tmp_path / "home", tmp_path / "config"
    config.mkdir()
    work = tmp_path / "work"
    servers = _servers(tmp_path)
    del servers["broken"]
    (config / "settings.json").write_text(json.dumps({"mcp": {"servers": servers}}))
    with FaultServer([text("ok")]) as server:
        proc = run_cli(
            ["run", "--model", "openai/m", "--base-url", server.openai_url, "--no-session", "hi"],
            home,
            cwd=work,
            OPENAI_API_KEY="sk-test",
            TETHER_CONFIG_DIR=str(config),
        )
    assert proc.returncode == 0, proc.stderr
    env = [(e["what"], e["state"]) for e in jsonl(proc.stdout) if e["type"] == "env"]
    assert env == [("mcp_server", "up"), ("sandbox", "ready"), ("mcp_server", "down")], env

"""`/agents`, `/mcp`, `/permissions`, `/hooks`, the footer's count of background shells and
`/tasks` in a real terminal: `tether chat` under tmux (send-keys / capture-pane), against a
loopback model that is never asked (`kit.faultserver`). The settings, agent files (tether's
and Claude Code's, one broken), an MCP server that starts and one that cannot, permission
rules and hooks are the user's; the shells are started with `/tool bash` (no model turn)."""

from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path

import pytest

from kit.faultserver import FaultServer
from kit.sandbox import sandbox_or_skip
from kit.tmux import Tmux
from kit.waits import wait_until
from tether.settings import user_config_dir

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed"),
]

DEMO = Path(__file__).resolve().parents[1] / "mcp" / "demo_server.py"
tmux = Tmux("tether-views")
wait_for = tmux.wait_for


def type_line(name: str, text: str) -> None:
    tmux("send-keys", "-t", name, "-l", text)
    tmux("send-keys", "-t", name, "Enter")


def close(name: str, gone: str) -> None:
    tmux("send-keys", "-t", name, "Escape")
    wait_until(lambda: gone not in tmux.screen(name), timeout_s=10, what="the view closed")


def _user_files(config: Path, home: Path, marks: Path) -> None:
    config.mkdir(parents=True, exist_ok=True)
    settings = {
        "agents": {"planner": {"description": "plans the work", "tools": ["read"]}},
        "mcp": {
            "servers": {
                "demo": {"command": sys.executable, "args": [str(DEMO)],
                         "env": {"MARK_DIR": str(marks)}},
                "ghost": {"command": "/nonexistent/mcp-server"},
            }
        },
        "permissions": {"allow": ["bash(echo *)"], "deny": ["write(secrets/**)"]},
        "hooks": {"on_failure": "deny",
                  "before_tool": [{"command": "true", "tools": ["bash"], "timeout": "5s"}]},
    }
    (config / "settings.json").write_text(json.dumps(settings))
    (config / "agents").mkdir()
    (config / "agents" / "scribe.md").write_text("---\ndescription: writes notes\n---\nYou write.")
    claude = home / ".claude" / "agents"
    claude.mkdir(parents=True)
    (claude / "reviewer.md").write_text(
        "---\nname: reviewer\ndescription: reviews diffs\ntools: Read, Grep\nmodel: inherit\n"
        "---\nYou review."
    )
    (claude / "scribe.md").write_text("---\nname: scribe\n---\nshadowed")
    (claude / "broken.md").write_text("---\nname: [\n---\nx")


def test_views_and_background_shells_in_tmux(tmp_path: Path) -> None:
    sandbox_or_skip()
    work, home, data = (tmp_path / d for d in ("work", "home", "data"))
    marks = work / "marks"  # the demo server writes there, inside the sandbox's folder
    marks.mkdir(parents=True)
    _user_files(user_config_dir(), home, marks)
    name = f"tether-views-{os.getpid()}"
    with FaultServer([]) as server:
        args = ["--model", "openai/m", "--base-url", server.openai_url, "--cwd", str(work)]
        with tmux.chat(name, args, home=data, HOME=str(home), OPENAI_API_KEY="sk-test"):
            wait_for(name, "openai/", 120)

            type_line(name, "/agents")
            screen = wait_for(name, ("subagents", "reviewer", "scribe", "planner"), 30)
            assert "reviewer — reviews diffs" in screen
            assert "from: user Claude Code file ~/.claude/agents/reviewer.md" in screen
            assert "scribe — writes notes" in screen and "from: user file " in screen
            assert "overrides: ~/.claude/agents/scribe.md" in screen
            assert "planner — plans the work" in screen and "from: user settings " in screen
            assert "tools: read, grep · model: yours" in screen
            assert "broken.md skipped: the" in screen  # a bad file: listed, no crash
            close(name, "overrides:")

            type_line(name, "/mcp")
            screen = wait_for(name, ("MCP servers", "demo  up · ", "ghost  down"), 60)
            assert "error: " in screen and "ghost" in screen.split("error: ", 1)[1]
            close(name, "MCP servers (mcp.servers)")

            type_line(name, "/permissions")
            screen = wait_for(name, ("permission rules in force", "approval mode ask"), 30)
            assert "deny   write(secrets/**)" in screen and "allow  bash(echo *)" in screen
            assert screen.count("user settings") == 3  # two rules, and the file read
            close(name, "permission rules in force")

            type_line(name, "/hooks")
            screen = wait_for(name, ("on_failure: deny", "before_tool       true"), 30)
            assert "timeout 5 s · bash · user settings" in screen
            close(name, "on_failure: deny")

            assert "⧗" not in tmux.screen(name)  # no shells: no count
            for word in ("one", "two"):
                call = {"command": f"echo started-{word}; sleep 300", "run_in_background": True}
                type_line(name, f"/tool bash {json.dumps(call)}")
            wait_for(name, "⧗ 2 shells", 30)

            def written() -> bool:
                logs = list((data / "sessions").glob("*/tasks/bash_*.log"))
                return sum("started-" in p.read_text() for p in logs) == 2

            wait_until(written, timeout_s=30, what="both shells wrote their line")
            type_line(name, "/tasks")
            screen = wait_for(name, ("background shells:", "stop it: /tasks stop"), 30)
            assert "$ echo started-one; sleep 300" in screen
            assert "│ started-one" in screen and "│ started-two" in screen
            assert screen.count("running for ") == 2 and "output file:" in screen
            first = screen.split("stop it: /tasks stop ", 1)[1].split()[0]
            type_line(name, f"/tasks stop {first}")
            wait_for(name, ("⧗ 1 shell", f"stopped {first}"), 30)
            short = {"command": "sleep 2", "run_in_background": True}
            type_line(name, f"/tool bash {json.dumps(short)}")
            wait_for(name, "⧗ 2 shells", 30)
            wait_for(name, "⧗ 1 shell", 30)  # it ended on its own: the footer follows
            type_line(name, "/quit")
        assert server.requests == []

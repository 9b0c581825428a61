"""A permission rule naming no tool (`bassh(rm *)`, a typo that disarms a deny rule) never
matches: the settings' load says so, one line per rule naming the rule and its file (the third
trial: accepted silently). Claude Code's names tether maps (`WebFetch`, `Bash`, `Read`) and MCP
names (`mcp__server__tool`) are known and are not warned about; `WebFetch(...)` matches
`web_fetch` calls."""

from __future__ import annotations

import json
import os
from pathlib import Path

from kit.cli import run_cli
from kit.faultserver import FaultServer, text
from tether.permissions.rules import Rules

RULES = {
    "deny": ["bassh(rm *)", "WebFetch(domain:example.com)", "Bash(rm:*)", "mcp__github__*"],
    "ask": ["NoSuchTool(x)", "Read(.env)", "mcp__srv__do_it"],
    "allow": ["web_*", "todo"],
}


def _settings() -> Path:
    config = Path(os.environ["TETHER_CONFIG_DIR"])
    config.mkdir(parents=True, exist_ok=True)
    path = config / "settings.json"
    path.write_text(json.dumps({"permissions": RULES}))
    return path


def _warned(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if "names no tool" in line]


def test_a_run_says_which_rules_name_no_tool(tmp_path: Path) -> None:
    path = _settings()
    work = tmp_path / "work"
    work.mkdir()
    with FaultServer([text("done")]) as server:
        ran = run_cli(
            ["run", "-m", "openai/m", "--base-url", server.openai_url, "--no-session",
             "--output-format", "text", "go"],
            tmp_path / "home",
            cwd=work,
        )
    assert ran.returncode == 0, ran.stderr
    warned = _warned(ran.stderr)
    assert len(warned) == 2, ran.stderr
    assert warned[0].startswith(
        f"tether: warning: permissions.deny rule 'bassh(rm *)' in {path} names no tool ('bassh')"
    )
    assert warned[1].startswith("tether: warning: permissions.ask rule 'NoSuchTool(x)' in ")
    assert "web_fetch" in warned[0]  # the tools there are


def test_permissions_list_says_it_too(tmp_path: Path) -> None:
    _settings()
    out = run_cli(["permissions", "list"], tmp_path / "home")
    assert out.returncode == 0, out.stderr
    assert [w.split(" in ")[0] for w in _warned(out.stderr)] == [
        "tether: warning: permissions.deny rule 'bassh(rm *)'",
        "tether: warning: permissions.ask rule 'NoSuchTool(x)'",
    ]


def test_claude_codes_webfetch_names_web_fetch() -> None:
    rules = Rules.of(deny=["WebFetch(domain:example.com)", "WebSearch"])
    assert rules.decide("web_fetch", {"url": "https://example.com/x"}).action == "deny"
    assert rules.decide("web_fetch", {"url": "https://python.org/"}).action is None
    assert rules.decide("web_search", {}).action == "deny"

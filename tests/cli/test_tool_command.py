"""Secret tools and the user's direct calls (issue 39, audit row 10): `@tool(secret=True)` is
kept out of the model's catalog and uncallable by it, and `tether tool NAME --json ARGS` calls
it (any tool) with the tools `tether run` builds in that folder."""

from __future__ import annotations

import json
from pathlib import Path

from kit.cli import Completed, run_cli
from kit.faultserver import FaultServer, text, tool
from kit.sandbox import sandbox_or_skip

VAULT = '''from tether.tools import tool


@tool(secret=True)
def rotate_key(key: str) -> str:
    """Rotate a key.

    Args:
        key: which key.
    """
    return f"rotated {key}"
'''


def _setup(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    tools = tmp_path / "tools"
    tools.mkdir()
    (tools / "vault.py").write_text(VAULT)
    config = tmp_path / "config"
    config.mkdir()
    (config / "settings.json").write_text(json.dumps({"tools": {"folders": [str(tools)]}}))
    return tmp_path / "home", {"TETHER_CONFIG_DIR": str(config)}


def _tool(home: Path, env: dict[str, str], *args: str) -> Completed:
    return run_cli(["tool", *args], home, TETHER_CONFIG_DIR=env["TETHER_CONFIG_DIR"])


def test_the_user_calls_a_secret_tool_and_lists_it_marked(tmp_path: Path) -> None:
    home, env = _setup(tmp_path)
    listed = _tool(home, env, "--list")
    assert listed.returncode == 0, listed.stderr
    (row,) = [x for x in listed.stdout.splitlines() if x.startswith("rotate_key")]
    assert "[secret]" in row
    assert any(x.startswith("read ") for x in listed.stdout.splitlines())
    done = _tool(home, env, "rotate_key", "--json", '{"key": "db"}')
    assert done.returncode == 0, done.stderr
    assert done.stdout == "rotated db\n"


def test_bad_calls_are_one_line_and_exit_1(tmp_path: Path) -> None:
    home, env = _setup(tmp_path)
    for args, words in (
        (["rotate_key", "--json", '{"nope": 1}'], "rotate_key"),
        (["rotate_key", "--json", "[1]"], "JSON object"),
        (["rotate_key", "--json", "{bad"], "not JSON"),
        (["nosuch"], "unknown tool"),
        ([], "name a tool"),
    ):
        proc = _tool(home, env, *args)
        assert proc.returncode == 1, (args, proc.stderr)
        lines = [x for x in proc.stderr.splitlines() if x.strip()]
        assert len(lines) == 1 and words in lines[0], (args, proc.stderr)
        assert "Traceback" not in proc.stderr and proc.stdout == ""


def test_a_builtin_tool_runs_in_the_folder(tmp_path: Path) -> None:
    home, env = _setup(tmp_path)
    work = tmp_path / "work"
    work.mkdir()
    (work / "notes.txt").write_text("hello there\n")
    proc = _tool(home, env, "read", "--json", '{"path": "notes.txt"}')
    assert proc.returncode == 0, proc.stderr
    assert "hello there" in proc.stdout
    outside = _tool(home, env, "read", "--json", json.dumps({"path": str(tmp_path / "x")}))
    assert outside.returncode == 1  # the path policy holds for the user's calls too


def test_the_model_neither_sees_nor_calls_a_secret_tool(tmp_path: Path) -> None:
    home, env = _setup(tmp_path)
    with FaultServer([tool("rotate_key", key="db"), text("ok")]) as server:
        proc = run_cli(
            ["run", "--model", "openai/m", "--base-url", server.openai_url, "--no-session", "go"],
            home,
            OPENAI_API_KEY="sk-test",
            TETHER_CONFIG_DIR=env["TETHER_CONFIG_DIR"],
        )
        offered = [t["function"]["name"] for t in server.requests[0]["body"]["tools"]]
    assert proc.returncode == 0, proc.stderr
    assert "rotate_key" not in offered and "read" in offered
    events = [json.loads(x) for x in proc.stdout.splitlines()]
    (result,) = [e for e in events if e["type"] == "tool_result"]
    assert result["is_error"]
    shown = json.dumps(result)
    assert "unknown tool 'rotate_key'" in shown and "rotated" not in shown


def test_the_settings_model_needs_no_credentials_for_a_direct_call(tmp_path: Path) -> None:
    """No model is called: an Anthropic model without ANTHROPIC_API_KEY used to stop
    `tether tool` with exit 2."""
    home, env = _setup(tmp_path)
    config = Path(env["TETHER_CONFIG_DIR"]) / "settings.json"
    settings = json.loads(config.read_text())
    config.write_text(json.dumps({**settings, "model": "anthropic/claude-sonnet-4-5"}))
    done = _tool(home, {**env, "ANTHROPIC_API_KEY": ""}, "rotate_key", "--json", '{"key": "db"}')
    assert done.returncode == 0, done.stderr
    assert done.stdout == "rotated db\n"
    pinned = _tool(home, {**env, "OPENAI_API_KEY": ""}, "--list", "--model", "openai/gpt-4o")
    assert pinned.returncode == 0, pinned.stderr


def test_a_call_the_permission_rules_deny_is_refused_for_the_user_too(tmp_path: Path) -> None:
    """`permissions.deny` holds for the user's own calls as for the model's (the trial deleted
    a file through `tether tool bash` that `bash(rm *)` denies); `ask` is the user's own call."""
    home, env = _setup(tmp_path)
    config = Path(env["TETHER_CONFIG_DIR"]) / "settings.json"
    settings = json.loads(config.read_text())
    rules = {"deny": ["bash(rm *)"], "ask": ["bash(touch *)"]}
    config.write_text(json.dumps({**settings, "permissions": rules}))
    work = tmp_path / "work"
    work.mkdir(exist_ok=True)
    (work / "victim.txt").write_text("keep me\n")
    env = {**env, "TETHER_SANDBOX": sandbox_or_skip()}
    denied = _tool(home, env, "bash", "--json", '{"command": "rm victim.txt"}')
    assert denied.returncode == 1 and (work / "victim.txt").exists()
    lines = [x for x in denied.stderr.splitlines() if x.strip()]
    assert len(lines) == 1 and "denied" in lines[0] and "bash(rm *)" in lines[0], denied.stderr
    asked = _tool(home, env, "bash", "--json", '{"command": "touch made.txt"}')
    assert asked.returncode == 0 and (work / "made.txt").exists(), asked.stderr


def test_the_tools_are_those_run_offers_and_a_failed_command_exits_1(tmp_path: Path) -> None:
    """The trial's `tether tool --list` showed 10 tools (the embedded model's, the settings'
    default) while `tether run` offered 14, and `bash` exiting 3 exited 0: every tool is there,
    and a command that fails prints its output and exits 1."""
    home, env = _setup(tmp_path)
    listed = _tool(home, env, "--list")
    assert listed.returncode == 0, listed.stderr
    names = {line.split()[0] for line in listed.stdout.splitlines() if line[:1].strip()}
    assert {"shell_output", "shell_kill", "skill", "bash", "task"} <= names, names
    failed = _tool(home, env, "bash", "--json", '{"command": "echo hi; exit 3"}')
    assert failed.returncode == 1 and failed.stdout == "hi\n(exit code 3)\n", failed
    quiet = _tool(home, env, "bash", "--json", '{"command": "exit 4"}')
    assert quiet.returncode == 1 and "exit code 4" in quiet.stdout
    done = _tool(home, env, "bash", "--json", '{"command": "echo fine"}')
    assert done.returncode == 0 and done.stdout == "fine\n"


def test_tool_prints_no_model_notes_and_refuses_a_background_shell(tmp_path: Path) -> None:
    """The third trial: `tether tool` printed the context line (instruction files, skills)
    and the unknown-window note though no model is called; `bash` with `run_in_background`
    promised a shell that died as `tether tool` exited."""
    home, env = _setup(tmp_path)
    work = tmp_path / "work"
    work.mkdir(exist_ok=True)
    (work / "AGENTS.md").write_text("be brief\n")
    done = run_cli(
        ["tool", "--model", "openai/unknown-model-x", "ls", "--json", "{}"],
        home, cwd=work, TETHER_CONFIG_DIR=env["TETHER_CONFIG_DIR"], OPENAI_API_KEY="k",
    )
    assert done.returncode == 0, done.stderr
    assert "AGENTS.md" in done.stdout
    assert "context:" not in done.stderr and "context window" not in done.stderr, done.stderr
    bg = _tool(home, env, "bash", "--json", '{"command": "sleep 30", "run_in_background": true}')
    assert bg.returncode == 1
    assert bg.stderr == (
        "tether: tether tool runs no background shell (it would stop when tether tool exits): "
        "drop run_in_background to run the command in the foreground\n"
    )

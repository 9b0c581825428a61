"""At start, each shell hook's command is checked against what the sandbox shows: a script in
tether's config folder (which the sandbox hides: the Claude Code habit of keeping hooks beside
the settings), in the host's /tmp, missing, not executable, or a program not on the PATH, is one
`hook_unusable` warning naming the hook and why, instead of a failure on every call."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from kit.agents import subagent_agent
from tether.agent.events import AgentEvent, WarningEvent
from tether.agent.host import Host
from tether.agent.turn.hook_check import command_problem
from tether.sandbox.config import command_config
from tether.testing import ScriptedProvider, call
from tether.tools.base import Tool
from tether.tools.builtin.toolset import builtin_tools


def unusable(events: list[AgentEvent]) -> list[str]:
    return [e.message for e in events if isinstance(e, WarningEvent) and e.kind == "hook_unusable"]


def script(path: Path, body: str = "exit 2", *, executable: bool = True) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"#!/bin/bash\n{body}\n")
    if executable:
        path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return path


def bash_tool() -> list[Tool]:
    return [t for t in builtin_tools() if t.name == "bash"]


def test_a_hook_script_in_the_config_folder_is_named_at_start_and_really_fails(
    tmp_path: Path,
) -> None:
    config_dir = Path(os.environ["TETHER_CONFIG_DIR"])
    guard = script(config_dir / "hooks" / "check.sh", "echo 'no rm' >&2; exit 2")
    events: list[AgentEvent] = []
    provider = ScriptedProvider([call("bash", id="b1", command="touch ran"), "done"])
    agent = subagent_agent(
        provider,
        tmp_path,
        tools=bash_tool(),
        settings={"hooks": {"on_failure": "deny", "before_tool": [{"command": str(guard)}]}},
        host=Host(on_event=events.append),
    )
    [line] = unusable(events)  # at start, before any call
    assert line.startswith("before_tool hook `") and f"cannot run: {guard}: it is in" in line
    assert "tether's own folders, which the sandbox hides" in line
    assert "every call it checks will be refused (hooks.on_failure = deny)" in line
    agent.run_sync("go")
    assert not (tmp_path / "ran").exists()
    # the check was right: inside the sandbox the script is not there (bash: 127)
    failed = [e.message for e in events if isinstance(e, WarningEvent) and e.kind == "hook_failed"]
    assert len(failed) == 1 and "exit code 127" in failed[0]
    assert len(unusable(events)) == 1  # said once, not per call


def test_hooks_that_can_run_get_no_warning(tmp_path: Path) -> None:
    script(tmp_path / ".tether" / "hooks" / "ok.sh", "exit 0")
    script(tmp_path / "plain.sh", "exit 0", executable=False)
    events: list[AgentEvent] = []
    commands = [
        ".tether/hooks/ok.sh",
        "bash plain.sh",
        "FOO=1 ./.tether/hooks/ok.sh --flag",
        "cat >> .audit.jsonl",
        "echo hi; exit 0",
        "$HOME/whatever.sh",
        "python3 -c 'print(1)'",
        "jq -e . >/dev/null || exit 2",
    ]
    agent = subagent_agent(
        ScriptedProvider(["ok"]),
        tmp_path,
        settings={"hooks": {"after_tool": [{"command": c} for c in commands]}},
        host=Host(on_event=events.append),
    )
    assert unusable(events) == []
    assert agent.run_sync("go").text == "ok"


@pytest.mark.parametrize(
    ("command", "why"),
    [
        ("./plain.sh", "./plain.sh: not executable (chmod +x"),
        ("./missing.sh", "./missing.sh: no such file"),
        ("no-such-program-xyz --check", "no-such-program-xyz: not found on the PATH"),
        ("bash missing.sh", "missing.sh: no such file"),
        ("X=1 exec ~/.config/../nope.sh", "no such file"),
    ],
)
def test_what_the_check_finds(tmp_path: Path, command: str, why: str) -> None:
    script(tmp_path / "plain.sh", executable=False)
    cfg, _ = command_config(tmp_path, None, network=False)
    found = command_problem(command, root=tmp_path, sandbox=cfg, env=dict(os.environ))
    assert found is not None and why in found


def test_a_script_in_the_hosts_tmp_is_private_inside_the_sandbox(tmp_path: Path) -> None:
    root = tmp_path / "project"
    root.mkdir()
    outside = script(tmp_path / "elsewhere" / "check.sh")
    cfg, _ = command_config(root, None, network=False)
    found = command_problem(str(outside), root=root, sandbox=cfg, env=dict(os.environ))
    if not outside.is_relative_to("/tmp"):
        pytest.skip("the test folder is not under /tmp here")
    assert found is not None and "private, empty one" in found
    inside = script(root / "check.sh")
    assert command_problem(str(inside), root=root, sandbox=cfg, env=dict(os.environ)) is None


def test_without_a_sandbox_one_line_says_no_hook_will_run(tmp_path: Path) -> None:
    from kit.agents import make_agent

    events: list[AgentEvent] = []
    make_agent(
        ScriptedProvider([]),
        tmp_path,
        settings={
            "tools": {"sandbox": "none"},
            "hooks": {"before_tool": [{"command": "true"}], "stop": [{"command": "true"}]},
        },
        host=Host(on_event=events.append),
    )
    [line] = unusable(events)
    assert line.startswith("2 shell hooks set but no OS sandbox works here")

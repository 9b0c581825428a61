"""Named subagents from Markdown files (`tether.settings.agent_files`): tether's own folders and
Claude Code's, read into the settings' `SubagentSettings`; a project's only once trusted; which
definition of a name wins; a bad file is one warning; the `task` tool lists them and a child
runs with the file's prompt and tools."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kit.agents import routed
from kit.events import first_user_text
from tether import Agent
from tether.agent.host import Host
from tether.agent.subagents import TASK_TOOL
from tether.settings import user_config_dir
from tether.settings.agent_files import parse_agent_file
from tether.settings.trust import approve, check_trust, trusted_settings
from tether.testing import ScriptedProvider, call

CLAUDE_REVIEWER = """---
name: code-reviewer
description: Expert code review specialist.
  Use after changes.
tools: Read, Grep, Glob, WebFetch, Task(explore), mcp__github__Get_PR
disallowedTools: Bash
model: sonnet
color: cyan
permissionMode: acceptEdits
---
You are a senior code reviewer.

Review carefully.
"""


def test_a_claude_code_file_reads_into_the_settings_shape() -> None:
    got = parse_agent_file(CLAUDE_REVIEWER, stem="whatever")
    assert not isinstance(got, str)
    name, agent = got
    assert name == "code-reviewer"  # the frontmatter's name, not the file's
    assert agent.description == "Expert code review specialist. Use after changes."
    assert agent.tools == ["read", "grep", "glob", "web_fetch", "task", "mcp__github__Get_PR"]
    assert agent.disallowed_tools == ["bash"]
    assert agent.model == "anthropic/claude-sonnet-4-5"
    assert agent.system == "You are a senior code reviewer.\n\nReview carefully."


@pytest.mark.parametrize(
    ("model", "expected"),
    [("inherit", None), ("haiku", "anthropic/claude-haiku-4-5"),
     ("claude-opus-4-1", "anthropic/claude-opus-4-1"), ("openai/gpt-4o", "openai/gpt-4o")],
)
def test_models_as_claude_code_writes_them(model: str, expected: str | None) -> None:
    got = parse_agent_file(f"---\nmodel: {model}\n---\nx", stem="a")
    assert not isinstance(got, str) and got[1].model == expected


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("---\nname: [1\n---\nbody", "does not parse"),
        ("---\n- a\n- b\n---\nbody", "not a mapping"),
        ("---\nname: has space\n---\nbody", "not a subagent name"),
        ("---\ntools: 3\n---\nbody", "`tools` must be tool names"),
        ("---\nisolation: sandbox\n---\nbody", "isolation"),
        ("---\nmodel: 5\n---\nbody", "`model` must be text"),
    ],
)
def test_a_bad_file_gives_one_reason(text: str, reason: str) -> None:
    got = parse_agent_file(text, stem="x")
    assert isinstance(got, str) and reason in got and "\n" not in got


@given(st.text())
def test_parsing_never_raises(text: str) -> None:
    got = parse_agent_file(text, stem="stem")
    assert isinstance(got, str | tuple)


def _write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "home"
    folder.mkdir()
    monkeypatch.setenv("HOME", str(folder))
    return folder


def test_where_each_comes_from_and_which_wins(tmp_path: Path, home: Path) -> None:
    root = tmp_path / "proj"
    user = user_config_dir()
    _write(user / "settings.json", '{"agents": {"json-user": {"system": "u"}, "both": {"system": "user json"}}}')
    _write(root / ".tether/settings.json", '{"agents": {"json-proj": {"system": "p"}}}')
    _write(root / ".tether/agents/both.md", "project tether file")
    _write(root / ".claude/agents/both.md", "---\nname: both\n---\nproject claude file")
    _write(root / ".claude/agents/helper.md", "---\nname: helper\ntools: Bash\n---\nhelps")
    _write(user / "agents/mine.md", "---\ndescription: my own\n---\nmine")
    _write(home / ".claude/agents/helper.md", "---\nname: helper\n---\nuser helper")
    _write(home / ".claude/agents/broken.md", "---\nname: [\n---\nx")

    loaded, refused = trusted_settings(root)
    assert refused is not None and ".claude/agents/helper.md (new)" in refused
    assert "agent files" in refused
    # untrusted: only the user's agents; the project's files are not read
    assert sorted(loaded.settings.agents.named) == ["both", "helper", "json-user", "mine"]
    assert loaded.settings.agents.named["helper"].system == "user helper"
    assert loaded.settings.agents.named["both"].system == "user json"
    [warning] = loaded.warnings
    assert warning.startswith(f"warning: agent file {home / '.claude/agents/broken.md'} skipped:")

    approve(root)
    assert check_trust(root).trusted
    loaded, refused = trusted_settings(root)
    assert refused is None
    by_name = {d.name: d for d in loaded.agents}
    assert set(by_name) == {"json-user", "json-proj", "both", "helper", "mine"}
    named = loaded.settings.agents.named
    assert named["both"].system == "project tether file"  # the project's file beats user JSON
    assert (by_name["both"].scope, by_name["both"].kind) == ("project", "tether")
    assert by_name["both"].shadows == (
        root / ".claude/agents/both.md", user / "settings.json"
    )
    assert named["helper"].tools == ["bash"] and by_name["helper"].kind == "claude"
    assert by_name["helper"].shadows == (home / ".claude/agents/helper.md",)
    assert by_name["json-proj"].scope == "project" and by_name["json-proj"].kind == "settings"
    assert named["mine"].description == "my own" and by_name["mine"].scope == "user"
    # an edited agent file un-approves the project, as any `.tether/` file does
    _write(root / ".claude/agents/helper.md", "---\nname: helper\n---\nplanted")
    assert not check_trust(root).trusted
    assert trusted_settings(root)[0].settings.agents.named["helper"].system == "user helper"


def test_a_file_agent_runs_with_its_prompt_and_tools(tmp_path: Path, home: Path) -> None:
    _write(
        home / ".claude/agents/reviewer.md",
        "---\ndescription: reviews diffs\ntools: Read, Grep, Bash, NotebookEdit\n"
        "disallowedTools: Bash\n---\nYou review.\n",
    )
    _write(user_config_dir() / "agents/bad.md", "---\nisolation: 3\n---\nx")
    provider = ScriptedProvider(
        routed(
            {
                "main": [
                    call(TASK_TOOL, id="t1", name="r", prompt="review it", agent="reviewer",
                         tools=["read", "bash", "ls"]),
                    "final",
                ],
                "review it": ["looks fine"],
            }
        )
    )
    notes: list[str] = []
    agent = Agent.from_settings(
        tmp_path,
        model=provider,
        host=Host(note=notes.append),
        overrides={"agents.spawn": "allow"},
    )
    assert [n for n in notes if "agent file" in n] == [
        f"warning: agent file {user_config_dir() / 'agents/bad.md'} skipped: isolation: "
        "Input should be 'none' or 'worktree'"
    ]
    spec = {s.name: s for s in agent.registry.specs()}[TASK_TOOL]
    assert "- reviewer: reviews diffs" in spec.description
    assert agent.run_sync("main").text == "final"
    [child] = [r for r in provider.requests if first_user_text(r.messages) == "review it"]
    assert child.system is not None and child.system.startswith("You review.")
    # the call asked for read, bash, ls: its own list bounds it, bash is disallowed
    assert sorted(s.name for s in child.tools) == ["read"]

"""A removed approved file needs no new approval (it takes nothing new into a run); an added or
changed one still does: `tether trust`, then remove, add or change `.tether/` files, then
`tether run --print-system`."""

from __future__ import annotations

from pathlib import Path

import pytest

from kit.cli import run_cli
from tether.settings.trust import check_trust

TOOL = "from tether.tools import tool\n\n@tool\ndef mine() -> str:\n    return 'mine'\n"


def _cli(args: list[str], tmp: Path) -> tuple[int, str, str]:
    done = run_cli(
        args,
        tmp / "home",
        cwd=tmp / "proj",
        TETHER_CONFIG_DIR=str(tmp / "cfg"),
        OPENAI_API_KEY="sk-test",
    )
    return done.returncode, done.stdout, done.stderr


def _project(tmp: Path) -> Path:
    proj = tmp / "proj"
    (proj / ".tether" / "tools").mkdir(parents=True)
    (proj / ".tether" / "settings.json").write_text("{}")
    (proj / ".tether" / "tools" / "mine.py").write_text(TOOL)
    (proj / "more").mkdir()
    (proj / "more" / "b.py").write_text(TOOL.replace("mine", "b"))
    (tmp / "cfg").mkdir()
    return proj


def test_removing_the_settings_file_needs_no_approval(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TETHER_CONFIG_DIR", str(tmp_path / "cfg"))
    proj = _project(tmp_path)
    assert _cli(["trust"], tmp_path)[0] == 0
    (proj / ".tether" / "settings.json").unlink()
    code, _, stderr = _cli(["run", "--model", "openai/m", "--print-system"], tmp_path)
    assert code == 0, stderr
    assert "not approved" not in stderr, stderr
    state = check_trust(proj)
    assert state.trusted and state.removed == (".tether/settings.json",)
    # `tether trust --show` still lists the removal
    shown = _cli(["trust", "--show"], tmp_path)
    assert "removed\t.tether/settings.json" in shown[1].splitlines(), shown
    # a settings file that comes back with other content is a change again
    (proj / ".tether" / "settings.json").write_text('{"tools": {"safe": true}}')
    code, _, stderr = _cli(["run", "--model", "openai/m", "--print-system"], tmp_path)
    assert ".tether/settings.json (changed) not approved" in stderr, stderr


def test_removing_a_tool_folder_needs_no_approval_but_adding_or_changing_does(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TETHER_CONFIG_DIR", str(tmp_path / "cfg"))
    proj = _project(tmp_path)
    (proj / ".tether" / "settings.json").write_text('{"tools": {"folders": ["more"]}}')
    assert _cli(["trust"], tmp_path)[0] == 0
    (proj / "more" / "b.py").unlink()
    (proj / ".tether" / "tools" / "mine.py").unlink()
    state = check_trust(proj)
    assert state.trusted, state.message()
    assert state.removed == (".tether/tools/mine.py", "more/b.py")
    code, _, stderr = _cli(["run", "--model", "openai/m", "--print-system"], tmp_path)
    assert code == 0 and "not approved" not in stderr, stderr
    # an added file, and a changed one, still need approval
    (proj / ".tether" / "tools" / "new.py").write_text(TOOL.replace("mine", "new"))
    assert check_trust(proj).changes == ((".tether/tools/new.py", "new"),)
    (proj / ".tether" / "tools" / "new.py").unlink()
    (proj / ".tether" / "settings.json").write_text('{"tools": {"folders": []}}')
    assert check_trust(proj).changes == ((".tether/settings.json", "changed"),)
    code, _, stderr = _cli(["run", "--model", "openai/m", "--print-system"], tmp_path)
    assert ".tether/settings.json (changed) not approved" in stderr, stderr


def test_tethers_own_writes_keep_the_project_approved(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A new user's trial: one `tether run -w NAME` (its worktree under `.tether/worktrees/`)
    or one `tether mcp add --project` un-approved the project, and its deny rules stopped
    applying. The worktrees are tether's own, not project files; `mcp add|remove --project` is
    the user's change, like `config set --project`: the project stays approved."""
    monkeypatch.setenv("TETHER_CONFIG_DIR", str(tmp_path / "cfg"))
    proj = _project(tmp_path)
    assert _cli(["config", "set", "--project", "permissions.deny", '["bash(rm *)"]'], tmp_path)[0] == 0
    assert _cli(["trust"], tmp_path)[0] == 0
    # what `tether run -w fix` leaves: a checkout with a changed file, its own .tether/ too
    tree = proj / ".tether" / "worktrees" / "fix"
    (tree / ".tether").mkdir(parents=True)
    (tree / "a.txt").write_text("changed in the worktree")
    (tree / ".tether" / "settings.json").write_text("{}")
    assert check_trust(proj).trusted
    code, out, stderr = _cli(["mcp", "add", "--project", "srv", "--", "true"], tmp_path)
    assert code == 0, stderr
    assert check_trust(proj).trusted, stderr
    code, out, stderr = _cli(["permissions", "check", "bash(rm a.txt)"], tmp_path)
    assert "deny" in out + stderr, (out, stderr)
    assert _cli(["mcp", "remove", "--project", "srv"], tmp_path)[0] == 0
    assert check_trust(proj).trusted
    # a project that was not approved is not approved by tether's write either
    (proj / ".tether" / "tools" / "mine.py").write_text(TOOL.replace("mine", "other"))
    assert _cli(["mcp", "add", "--project", "srv", "--", "true"], tmp_path)[0] == 0
    assert not check_trust(proj).trusted


def test_jobs_commands_keep_the_project_approved(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The third trial: `tether jobs init` (its `ai-jobs` marker) and `tether jobs add` (a task
    file) un-approved the project, so its deny rules stopped applying and the documented
    `jobs init && jobs add x.md && jobs dispatch` failed at its third step."""
    monkeypatch.setenv("TETHER_CONFIG_DIR", str(tmp_path / "cfg"))
    proj = _project(tmp_path)
    assert _cli(["config", "set", "--project", "permissions.deny", '["bash(rm *)"]'], tmp_path)[0] == 0
    assert _cli(["trust"], tmp_path)[0] == 0
    task = tmp_path / "hi.md"
    task.write_text("---\nid: hi\nschedule: {every: 1h}\n---\nSay hi.\n")
    for args in (["jobs", "init"], ["jobs", "add", str(task)], ["jobs", "disable"], ["jobs", "enable"]):
        code, _out, stderr = _cli(args, tmp_path)
        assert code == 0, (args, stderr)
        assert check_trust(proj).trusted, (args, stderr)
    assert (proj / ".tether" / "jobs" / "hi.md").is_file()


def test_an_unapproved_project_still_gives_its_deny_and_ask_rules(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A change anywhere in `.tether/` leaves the project unapproved until `tether trust`; its
    settings file then gives only what takes away (deny and ask rules), never what grants (an
    allow rule, a tool folder, a hook): a planted file must not disarm the deny rules."""
    monkeypatch.setenv("TETHER_CONFIG_DIR", str(tmp_path / "cfg"))
    proj = _project(tmp_path)
    settings = '{"permissions": {"deny": ["bash(rm *)"], "ask": ["bash(git push*)"], "allow": ["bash(curl *)"]}}'
    (proj / ".tether" / "settings.json").write_text(settings)
    assert not check_trust(proj).trusted  # never approved
    checks = {"bash(rm a.txt)": "deny", "bash(git push origin)": "ask", "bash(curl x)": "none"}
    for call, verdict in checks.items():
        _code, out, stderr = _cli(["permissions", "check", call], tmp_path)
        assert out.split()[0] == verdict, (call, out, stderr)
    assert _cli(["trust"], tmp_path)[0] == 0
    _code, out, stderr = _cli(["permissions", "check", "bash(curl x)"], tmp_path)
    assert out.split()[0] == "allow", (out, stderr)

"""`--worktree NAME` / `-w NAME` with real git: the run works in `.tether/worktrees/NAME` on
branch `tether/NAME`; at the end an unchanged worktree is removed with its branch and a
changed one kept, one stderr line saying which; outside a repository, one line and exit 1.
And a named subagent with `isolation: "worktree"` works in a worktree of its own."""

from __future__ import annotations

from pathlib import Path

from kit.agents import routed, subagent_agent
from kit.cli import Completed, run_cli
from kit.events import results
from kit.faultserver import FaultServer, text, tool
from kit.gitrepo import git
from kit.gitrepo import repo as make_repo
from kit.sandbox import sandbox_or_skip
from tether.agent.events import AgentEvent
from tether.agent.host import Host
from tether.agent.subagents import TASK_TOOL
from tether.testing import ScriptedProvider, call
from tether.tools.builtin.toolset import builtin_tools


def repo(tmp_path: Path) -> Path:
    return make_repo(tmp_path, {"README.md": "hello\n"})


def run(server: FaultServer, home: Path, cwd: Path, *args: str) -> Completed:
    return run_cli(
        ["run", "--model", "openai/m", "--base-url", server.openai_url, "--no-session", *args],
        home,
        cwd=cwd,
        TETHER_SANDBOX=sandbox_or_skip(),
    )


def test_an_unchanged_worktree_is_removed(tmp_path: Path) -> None:
    root, home = repo(tmp_path), tmp_path / "home"
    with FaultServer([text("nothing to do")]) as server:
        proc = run(server, home, root, "-w", "look", "just look")
        (request,) = server.requests
    assert proc.returncode == 0, proc.stderr
    tree = (root / ".tether" / "worktrees" / "look").resolve()
    assert f"Working folder: {tree}" in request["body"]["messages"][0]["content"]
    assert proc.stderr.strip().splitlines()[-1] == "tether: worktree look removed: nothing changed"
    assert not tree.exists() and "tether/look" not in git(root, "branch", "--list")


def test_a_changed_worktree_is_kept_and_the_main_checkout_untouched(tmp_path: Path) -> None:
    root, home = repo(tmp_path), tmp_path / "home"
    script = [tool("write", path="feature.txt", content="new"), text("wrote it")]
    with FaultServer(script) as server:
        proc = run(server, home, root, "--worktree", "feat", "add a feature")
    assert proc.returncode == 0, proc.stderr
    tree = (root / ".tether" / "worktrees" / "feat").resolve()
    assert proc.stderr.strip().splitlines()[-1] == (
        f"tether: worktree kept: {tree} (branch tether/feat has changes)"
    )
    assert (tree / "feature.txt").read_text() == "new" and not (root / "feature.txt").exists()
    assert git(tree, "branch", "--show-current") == "tether/feat"
    assert git(root, "status", "--porcelain") == ""


def test_outside_a_repository_is_one_line_and_exit_1(tmp_path: Path) -> None:
    plain, home = tmp_path / "plain", tmp_path / "home"
    plain.mkdir()
    with FaultServer([]) as server:
        proc = run(server, home, plain, "-w", "x", "hi")
        assert server.requests == []
    assert proc.returncode == 1
    assert proc.stderr.strip().splitlines() == [
        f"tether: {plain.resolve()} is not in a git repository: --worktree needs one"
    ], proc.stderr


def test_a_subagent_with_worktree_isolation(tmp_path: Path) -> None:
    root = repo(tmp_path)
    provider = ScriptedProvider(
        routed(
            {
                "build it": [
                    call(TASK_TOOL, id="call-12345678", name="iso", prompt="write it", agent="iso"),
                    "done",
                ],
                "write it": [call("write", path="made.txt", content="child"), "made"],
            }
        )
    )
    events: list[AgentEvent] = []
    settings = {"agents": {"spawn": "allow", "iso": {"isolation": "worktree"}}}
    agent = subagent_agent(
        provider, root, settings=settings, tools=builtin_tools(), host=Host(on_event=events.append)
    )
    agent.run_sync("build it")
    tree = (root / ".tether" / "worktrees" / "iso-12345678").resolve()
    (res,) = [r for r in results(events) if r.tool_call_id == "call-12345678"]
    assert res.content.endswith(f"(worktree kept: {tree} (branch tether/iso-12345678 has changes))")
    assert (tree / "made.txt").read_text() == "child" and not (root / "made.txt").exists()


def test_a_branch_name_with_slashes_is_taken(tmp_path: Path) -> None:
    """The fourth trial: `-w feat/login` was refused; git takes it for a branch, so tether does,
    in a folder whose name is safe (`feat+login`)."""
    root, home = repo(tmp_path), tmp_path / "home"
    script = [tool("write", path="login.txt", content="new"), text("wrote it")]
    with FaultServer(script) as server:
        proc = run(server, home, root, "-w", "feat/login", "add a login")
    assert proc.returncode == 0, proc.stderr
    tree = (root / ".tether" / "worktrees" / "feat+login").resolve()
    assert proc.stderr.strip().splitlines()[-1] == (
        f"tether: worktree kept: {tree} (branch tether/feat/login has changes)"
    )
    assert git(tree, "branch", "--show-current") == "tether/feat/login"
    assert (tree / "login.txt").read_text() == "new"
    # another legal name for the same folder is refused, the kept worktree untouched
    with FaultServer([]) as server:
        clash = run(server, home, root, "-w", "feat+login", "hi")
        assert server.requests == []
    assert clash.returncode == 1
    assert clash.stderr.strip().splitlines() == [
        f"tether: worktree folder {tree} holds branch tether/feat/login, not tether/feat+login: "
        "pick another name"
    ]


def test_names_git_refuses_for_a_branch_are_one_line_and_exit_1(tmp_path: Path) -> None:
    root, home = repo(tmp_path), tmp_path / "home"
    for name in ("a b", "x..y", ".hidden", "feat/", "@{-1}", "x.lock", "a~1", "-x"):
        with FaultServer([]) as server:
            proc = run(server, home, root, f"--worktree={name}", "hi")
            assert server.requests == []
        assert proc.returncode == 1, (name, proc.stderr)
        lines = proc.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith(f"tether: worktree name {name!r}: "), lines
    assert not (root / ".tether" / "worktrees").exists() or not any(
        (root / ".tether" / "worktrees").iterdir()
    )

"""`tether sessions checkpoints` / `rewind` and `tether permissions check` as a user runs them:
JSON lines on stdout, one-line errors with exit 1 that change nothing."""

from __future__ import annotations

import json
from pathlib import Path

from kit.cli import run_cli as tether
from tether import AgentConfig
from tether.agent.agent import Agent
from tether.agent.sessions import AgentSession
from tether.session import SessionStore
from tether.testing import ScriptedProvider, call, deterministic
from tether.tools.builtin.toolset import builtin_tools


def session_with_two_turns(home: Path, root: Path) -> str:
    store = SessionStore(home / "sessions")
    provider = ScriptedProvider(
        [call("write", path="a.txt", content="1"), "ok", call("write", path="a.txt", content="2"), "ok"]
    )
    agent = Agent(
        provider, config=AgentConfig(), tools=builtin_tools(), root=root,
        session=AgentSession.new(store, cwd=root), runtime=deterministic(),
    )
    agent.run_sync("first")
    agent.run_sync("second")
    agent.session.close()
    assert agent.session.id is not None
    return agent.session.id


def test_checkpoints_then_rewind_then_bad_input(tmp_path: Path) -> None:
    home, root = tmp_path / "home", tmp_path / "work"
    root.mkdir()
    sid = session_with_two_turns(home, root)
    out = tether(["sessions", "checkpoints", sid], home)
    assert out.returncode == 0, out.stderr
    rows = [json.loads(line) for line in out.stdout.splitlines()]
    assert [(r["turn"], r["files_changed"]) for r in rows] == [(1, ["a.txt"]), (2, ["a.txt"])]

    out = tether(["sessions", "rewind", sid, "--to", "2"], home)
    assert out.returncode == 0, out.stderr
    done = json.loads(out.stdout)
    assert done["written"] == ["a.txt"] and (root / "a.txt").read_text() == "1"
    assert "forked" in out.stderr and done["session"] != sid

    for args, says in [
        (["sessions", "rewind", sid, "--to", "9"], "outside"),
        (["sessions", "rewind", "nope", "--to", "1"], "no session"),
        (["sessions", "checkpoints", "nope"], "no session"),
    ]:
        out = tether(args, home)
        assert out.returncode == 1 and says in out.stderr and len(out.stderr.splitlines()) == 1
        assert "Traceback" not in out.stderr
    assert (root / "a.txt").read_text() == "1"  # nothing changed


def test_permissions_check_prints_the_decision_and_the_rule(tmp_path: Path) -> None:
    home = tmp_path / "home"
    config = tmp_path / "config"
    config.mkdir()
    (config / "settings.json").write_text(
        json.dumps({"permissions": {"allow": ["bash(pytest *)"], "deny": ["bash(rm -rf *)"]}})
    )
    cfg = str(config)
    out = tether(["permissions", "check", "bash(pytest -x && rm -rf build)"], home, TETHER_CONFIG_DIR=cfg)
    assert out.returncode == 0, out.stderr
    action, rule, source = out.stdout.strip().split("\t")
    assert (action, rule, source) == ("deny", "bash(rm -rf *)", str(config / "settings.json"))
    out = tether(["permissions", "check", "bash(make)"], home, TETHER_CONFIG_DIR=cfg)
    assert out.stdout.startswith("none\t") and "no rule" in out.stderr
    out = tether(["permissions", "check", "bash("], home, TETHER_CONFIG_DIR=cfg)
    assert out.returncode == 1 and "does not parse" in out.stderr

    (config / "settings.json").write_text(json.dumps({}))
    out = tether(["permissions", "list"], home, TETHER_CONFIG_DIR=cfg)
    assert out.returncode == 0 and out.stdout == ""
    assert out.stderr.strip() == (
        "tether: no permission rules (permissions.allow / ask / deny in a settings file)"
    )

    (config / "settings.json").write_text(json.dumps({"permissions": {"allow": ["bash(("]}}))
    out = tether(["permissions", "list"], home, TETHER_CONFIG_DIR=cfg)
    assert out.returncode == 1 and "bash((" in out.stderr and len(out.stderr.splitlines()) == 1


def test_rewind_to_a_turn_that_ran_in_another_folder_rewinds_that_folder(tmp_path: Path) -> None:
    """A session started in `a/` and continued in `b/` (`--resume` or ACP `session/load`
    there): its second turn's checkpoint is in `b/`'s shadow repository. `checkpoints` lists
    what that turn changed and `rewind --to 2` puts `b/` back (trial4: "the shadow repository
    was removed", which it was not)."""
    home, a, b = tmp_path / "home", tmp_path / "a", tmp_path / "b"
    a.mkdir()
    b.mkdir()
    store = SessionStore(home / "sessions")
    first = Agent(
        ScriptedProvider([call("write", path="one.txt", content="1"), "ok"]),
        config=AgentConfig(), tools=builtin_tools(), root=a,
        session=AgentSession.new(store, cwd=a), runtime=deterministic(),
    )
    first.run_sync("first")
    first.session.close()
    sid = first.session.id
    assert sid is not None
    (b / "keep.txt").write_text("mine")
    later = Agent(
        ScriptedProvider([call("write", path="two.txt", content="2"), "ok"]),
        config=AgentConfig(), tools=builtin_tools(), root=b,
        session=AgentSession.resume(store, sid), runtime=deterministic(id_prefix="u"),
    )
    later.run_sync("second")
    later.session.close()

    out = tether(["sessions", "checkpoints", sid], home)
    assert out.returncode == 0, out.stderr
    rows = [(r["turn"], r["files_changed"]) for r in map(json.loads, out.stdout.splitlines())]
    assert rows == [(1, ["one.txt"]), (2, ["two.txt"])], rows

    out = tether(["sessions", "rewind", sid, "--to", "2", "--files"], home)
    assert out.returncode == 0, out.stderr
    done = json.loads(out.stdout)
    assert done["removed"] == ["two.txt"] and done["folder"] == str(b.resolve())
    assert not (b / "two.txt").exists() and (b / "keep.txt").read_text() == "mine"
    assert (a / "one.txt").read_text() == "1"  # the first folder is not touched
    assert f"in {b.resolve()} (where it ran)" in out.stderr

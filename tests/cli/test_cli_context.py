"""`tether run` and what the model is told: the default system prompt with the environment and
AGENTS.md, the one stderr line, `--system` / `--append-system` / `--print-system`, `/name`
commands, and `--continue`."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from kit.cli import Completed
from kit.cli import run_cli as tether
from kit.faultserver import FaultServer, text
from tether.session import SessionStore


def setup(tmp_path: Path) -> tuple[Path, Path, dict[str, str]]:
    home = tmp_path / "home"
    work = tmp_path / "work"
    work.mkdir()
    subprocess.run(["git", "init", "-q", "-b", "main", str(work)], check=True)
    (work / "AGENTS.md").write_text("Always run `make check`.\n")
    config = Path(os.environ["TETHER_CONFIG_DIR"])
    (config / "commands").mkdir(parents=True)
    (config / "commands" / "greet.md").write_text("---\ndescription: Greets\n---\nSay hello to $1.")
    return home, work, {"HOME": str(tmp_path / "userhome")}


def run(server: FaultServer, home: Path, work: Path, env: dict[str, str], *args: str) -> Completed:
    return tether(
        ["run", "--model", "openai/m", "--base-url", server.openai_url, *args],
        home,
        cwd=work,
        **env,
    )


def system_of(server: FaultServer, i: int) -> str:
    messages = server.requests[i]["body"]["messages"]
    assert messages[0]["role"] == "system"
    return messages[0]["content"]


def test_the_default_prompt_is_sent_recorded_and_continued_byte_for_byte(tmp_path: Path) -> None:
    home, work, env = setup(tmp_path)
    with FaultServer([text("first"), text("second")]) as server:
        first = run(server, home, work, env, "hello")
        assert first.returncode == 0, first.stderr
        assert "context: instruction files AGENTS.md (25 bytes)" in first.stderr
        assert "skill: write-skill (built in)" in first.stderr  # named, not `1 skill(s)`
        (work / "later.txt").write_text("the tree is dirty now")
        again = run(server, home, work, env, "-c", "and again")
        assert again.returncode == 0, again.stderr
        system = system_of(server, 0)
        assert system == system_of(server, 1)
    assert "# Environment" in system and f"- Working folder: {work.resolve()}" in system
    assert "Git: repository at" in system and "no commits yet" in system
    assert "## AGENTS.md\nAlways run `make check`." in system
    (info,) = SessionStore(home / "sessions").list()
    loaded = SessionStore(home / "sessions").load(info.id)
    assert [e.kind for e in loaded.events].count("context") == 1
    assert [t.text for t in loaded.turns if t.role == "user"] == ["hello", "and again"]


def test_continue_without_a_session_is_one_line_and_exit_1(tmp_path: Path) -> None:
    home, work, env = setup(tmp_path)
    proc = tether(["run", "-c", "hi"], home, cwd=work, **env)
    assert proc.returncode == 1 and proc.stderr.strip() == f"tether: no session to continue in {work.resolve()}"


def test_system_replaces_the_default_append_adds_and_print_shows(tmp_path: Path) -> None:
    home, work, env = setup(tmp_path)
    with FaultServer([text("ok")]) as server:
        proc = run(server, home, work, env, "--system", "You review.", "--append-system", "Be terse.", "hi")
        assert proc.returncode == 0, proc.stderr
        system = system_of(server, 0)
        printed = run(server, home, work, env, "--print-system", "--append-system", "Be terse.")
        assert len(server.requests) == 1  # printing sends nothing
    assert system.startswith("You review.\n\n# Instruction files") and system.endswith("Be terse.")
    assert "# Environment" not in system
    assert printed.returncode == 0 and printed.stdout.startswith("You are tether")
    assert printed.stdout.rstrip().endswith("Be terse.") and "~" in printed.stderr


def test_a_command_is_expanded_and_an_unknown_one_is_never_sent(tmp_path: Path) -> None:
    home, work, env = setup(tmp_path)
    with FaultServer([text("hello Ada")]) as server:
        proc = run(server, home, work, env, "/greet Ada")
        assert proc.returncode == 0, proc.stderr
        user = server.requests[0]["body"]["messages"][-1]
        unknown = run(server, home, work, env, "/nope x")
        assert len(server.requests) == 1
    assert user["content"] in ("Say hello to Ada.", [{"type": "text", "text": "Say hello to Ada."}])
    assert unknown.returncode == 1
    assert unknown.stderr.strip().splitlines()[-1].startswith("tether: unknown command /nope (commands: ")
    assert len(SessionStore(home / "sessions").list()) == 1  # the unknown command wrote nothing
    assert json.loads(proc.stdout.splitlines()[-1])["type"] == "done"


def test_the_latest_session_of_this_folder_not_a_subagents_nor_another_folders(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tether.cli.run import latest_session

    monkeypatch.setenv("TETHER_HOME", str(tmp_path / "data"))
    store = SessionStore()
    here, there = tmp_path / "here", tmp_path / "there"
    assert latest_session(here) is None
    store.create("a1", cwd=str(here)).close()
    store.create("b1", cwd=str(there)).close()
    os.utime(store.path("a1"), (1, 1))
    store.create("a2", cwd=str(here)).close()
    store.create("child", cwd=str(here), caller=("a2", "call1", ("main", "task:call1"))).close()
    assert latest_session(here) == "a2"
    assert latest_session(there) == "b1"


def test_a_missing_import_in_agents_md_is_one_note_and_the_run_goes_on(tmp_path: Path) -> None:
    home, work, env = setup(tmp_path)
    (work / "AGENTS.md").write_text("Always run `make check`.\n@docs/style.md\n")
    with FaultServer([text("done")]) as server:
        proc = run(server, home, work, env, "hello")
    assert proc.returncode == 0, proc.stderr
    notes = [x for x in proc.stderr.splitlines() if "docs/style.md" in x]
    assert notes == [
        f"tether: note: {work / 'AGENTS.md'}: import docs/style.md: no readable file at "
        f"{work / 'docs' / 'style.md'}"
    ]
    assert "Always run `make check`." in system_of(server, 0)


def test_a_command_files_unknown_model_is_named_by_the_file(tmp_path: Path) -> None:
    """A command file's `model: bogus/zz` is refused naming the file, not `--model`, which the
    user never typed (trial4); nothing is sent."""
    home, work, env = setup(tmp_path)
    config = Path(os.environ["TETHER_CONFIG_DIR"])
    bad = config / "commands" / "bogusm.md"
    bad.write_text("---\nmodel: bogus/zz\n---\nDo it.")
    with FaultServer([text("never")]) as server:
        settings = {
            "model": "fake/m",
            "providers": {"fake": {"type": "openai", "base_url": server.openai_url}},
        }
        (config / "settings.json").write_text(json.dumps(settings))
        proc = tether(["run", "/bogusm"], home, cwd=work, OPENAI_API_KEY="sk-test", **env)
        assert server.requests == []
    assert proc.returncode == 1, proc.stderr
    last = proc.stderr.strip().splitlines()[-1]
    assert last.startswith(f"tether: {bad}: model 'bogus/zz': unknown provider 'bogus'"), last
    assert "--model" not in last

"""Issue 18 items 14–16: bad input gets one clear line, the right exit code, no traceback and
no session file."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from kit.cli import Completed, run_cli
from kit.faultserver import FaultServer, text, tool


def _tether(
    args: list[str], home: Path, stdin: str = "", env: dict[str, str] | None = None
) -> Completed:
    """`tether ARGS` in process, in `home`'s parent folder, with `env` added."""
    return run_cli(args, home, cwd=home.parent, input=stdin, **(env or {}))


def _one_clean_line(stderr: str) -> None:
    assert "Traceback" not in stderr
    assert len([x for x in stderr.splitlines() if not x.startswith("tether: usage:")]) <= 2


def _no_sessions(home: Path) -> None:
    assert not list((home / "sessions").glob("*.jsonl"))


@pytest.mark.parametrize(
    ("args", "code", "says"),
    [
        (["run", "--model", "anthropic/claude-x", "--base-url", "http://127.0.0.1:9/", "hi"], 2,
         "ANTHROPIC_API_KEY"),
        (["run", "--model", "", "hi"], 1, "--model is empty"),
        (["run", "--model", "  ", "hi"], 1, "--model is empty"),
        (["run", "--model", "openai/m", "--base-url", "not a url", "hi"], 1, "not a URL"),
        (["run", "--model", "openai/m", "--base-url", "ftp://host/x", "hi"], 1, "not a URL"),
        (["run", "--model", "openai/m", "--base-url", "http://:80", "hi"], 1, "not a URL"),
        # the TUI says it before its screen opens (it stayed open on an error screen before)
        (["chat", "--resume", "nosuch-id"], 1, "no session nosuch-id in"),
        (["chat", "--resume", "../bad"], 1, "no session ../bad"),  # neither an id nor a name
        # a model that cannot be used: as `tether run` says it (it opened a dead TUI)
        (["chat", "--model", "bogus"], 1, "unknown provider 'bogus' in --model"),
        (["chat", "--model", "openai"], 1, "names no model"),
        (["chat", "--model", "anthropic/claude-x", "--base-url", "http://127.0.0.1:9/"], 2,
         "ANTHROPIC_API_KEY"),
        # not a terminal: the screen would write escape codes into the pipe and wait forever
        ([], 1, "needs a terminal"),
        (["chat"], 1, "needs a terminal"),
        (["sessions", "delete", "nosuch-id"], 1, "no session nosuch-id"),
    ],
)  # fmt: skip
def test_flags_that_cannot_work_are_refused_before_anything_runs(
    tmp_path: Path, args: list[str], code: int, says: str
) -> None:
    home = tmp_path / "home"
    proc = _tether(args, home)
    assert proc.returncode == code, proc.stderr
    assert says in proc.stderr and proc.stdout == ""
    _one_clean_line(proc.stderr)
    _no_sessions(home)


def test_an_unwritable_tether_home_is_one_clear_line(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    home.chmod(0o500)
    try:
        if os.access(home, os.W_OK):
            pytest.skip("running as root: permissions are not enforced")
        with FaultServer([text("hi")]) as server:
            proc = _tether(
                ["run", "--model", "openai/m", "--base-url", server.openai_url, "hi"], home
            )
    finally:
        home.chmod(0o700)
    assert proc.returncode == 1, proc.stderr
    assert "cannot create session" in proc.stderr
    _one_clean_line(proc.stderr)


def test_a_settings_file_nested_too_deep_is_one_clear_line(tmp_path: Path) -> None:
    home = tmp_path / "home"
    project = tmp_path  # the run's cwd is home.parent
    (project / ".tether").mkdir()
    (project / ".tether" / "settings.json").write_text("[" * 100_000 + "]" * 100_000)
    unapproved = _tether(["run", "--model", "openai/m", "--base-url", "http://127.0.0.1:9/", "hi"], home)
    assert "Traceback" not in unapproved.stderr  # the trust check reads it leniently
    assert "tether trust" in unapproved.stderr  # and the run says the file was not loaded
    approved = _tether(["trust"], home)  # the user approves the file: it is then read
    assert approved.returncode == 0, approved.stderr
    proc = _tether(["run", "--model", "openai/m", "--base-url", "http://127.0.0.1:9/", "hi"], home)
    assert proc.returncode == 1, proc.stderr
    assert "nested too deeply" in proc.stderr
    _one_clean_line(proc.stderr)


def test_reaching_max_turns_before_an_answer_is_not_success(tmp_path: Path) -> None:
    home = tmp_path / "home"
    with FaultServer([tool("ls", path="."), tool("ls", path=".")]) as server:
        proc = _tether(
            ["run", "--model", "openai/m", "--base-url", server.openai_url, "--max-turns", "1",
             "list"],
            home,
        )  # fmt: skip
    assert proc.returncode == 1, proc.stderr
    assert "--max-turns reached" in proc.stderr
    done = json.loads(proc.stdout.splitlines()[-1])
    assert done["type"] == "done" and done["stop_reason"] == "max_turns"


def test_a_prompt_far_over_the_window_is_refused_before_sending(tmp_path: Path) -> None:
    home = tmp_path / "home"
    with FaultServer([text("hi")]) as server:
        proc = _tether(
            ["run", "--model", "openai/m", "--base-url", server.openai_url,
             "--context-window", "4096"],
            home,
            stdin="x" * 100_000,  # ~25,000 tokens
        )  # fmt: skip
        assert server.requests == []
    assert proc.returncode == 5, proc.stderr
    assert "context window is 4096 tokens" in proc.stderr
    _one_clean_line(proc.stderr)
    _no_sessions(home)


def test_a_file_the_prompt_attaches_counts_and_so_do_the_system_prompt_and_tools(
    tmp_path: Path,
) -> None:
    """`@big.txt` (40 KB, ~10,000 tokens) over an 8,192-token window: refused before anything
    is sent or stored (the trial's session stored it, overflowed, and could never go on); a
    prompt that fits alone but not beside the system prompt and tools is refused too."""
    home = tmp_path / "home"
    (tmp_path / "big.txt").write_text("word " * 8_000)  # the run's folder: home's parent
    with FaultServer([text("hi")]) as server:
        base = ["run", "--model", "openai/m", "--base-url", server.openai_url]
        attached = _tether([*base, "--context-window", "8192", "Summarize @big.txt"], home)
        beside = _tether([*base, "--context-window", "2048", "y" * 6_000], home)
        assert server.requests == []
    for proc in (attached, beside):
        assert proc.returncode == 5, proc.stderr
        assert "nothing was sent" in proc.stderr
        _one_clean_line(proc.stderr)
    assert "of system prompt and tools" in beside.stderr
    _no_sessions(home)


@pytest.mark.parametrize(
    "stdin",
    [
        '{"messages": []}',
        '{"messages": [{"role": "system", "content": "be brief"}]}',
        '[{"role": "system", "content": "a"}, {"role": "system", "content": "b"}]',
        '{"role": "system", "content": "be brief"}',
    ],
    ids=["empty", "one-system", "list-of-systems", "one-line-system"],
)
def test_a_stdin_context_without_a_user_or_assistant_message_is_refused(
    tmp_path: Path, stdin: str
) -> None:
    """Issue 39: only system messages went out with a placeholder user turn and exit 0, while
    an empty message list exits 1: one rule, one line, nothing sent, no session."""
    home = tmp_path / "home"
    with FaultServer([text("never sent")]) as server:
        proc = _tether(["run", "--model", "openai/m", "--base-url", server.openai_url], home, stdin)
        assert server.requests == []
    assert proc.returncode == 1, proc.stderr
    assert "no prompt" in proc.stderr and proc.stdout == ""
    assert len(proc.stderr.strip().splitlines()) == 1, proc.stderr
    _no_sessions(home)


def test_a_taken_session_id_is_one_line_before_any_setup_note(tmp_path: Path) -> None:
    """`--session ID` names a new session: a taken id printed the skills and context-window
    notes (and the no-sandbox warning) before its error. Now its one line is all, nothing
    runs, and the stored session is untouched."""
    home = tmp_path / "home"
    (home.parent / ".tether" / "skills" / "s").mkdir(parents=True)  # a skill: a setup note
    (home.parent / ".tether" / "skills" / "s" / "SKILL.md").write_text(
        "---\nname: s\ndescription: a skill\n---\nbody\n"
    )
    key = {"OPENAI_API_KEY": "sk-test"}
    with FaultServer([text("first")]) as server:
        args = ["run", "--model", "openai/m", "--base-url", server.openai_url]
        first = _tether([*args, "--session", "taken", "hi"], home, env=key)
        assert first.returncode == 0, first.stderr
        assert "skill" in first.stderr  # the note a second run must not print
        before = (home / "sessions" / "taken.jsonl").read_bytes()
        again = _tether([*args, "--session", "taken", "hi again"], home, env=key)
        assert len(server.requests) == 1
    assert again.returncode == 1 and again.stdout == ""
    assert again.stderr.splitlines() == [
        f"tether: session taken already exists at {home / 'sessions' / 'taken.jsonl'} "
        "(--session starts a new one; --resume taken goes on with it)"
    ]
    assert (home / "sessions" / "taken.jsonl").read_bytes() == before


@pytest.mark.parametrize("group", ["jobs", "mcp", "sessions", "config", "permissions"])
def test_a_command_group_alone_prints_its_help(tmp_path: Path, group: str) -> None:
    """The trial's `tether jobs` / `tether mcp` alone were a usage error (exit 1): they print
    their help, exit 0, as `git remote` alone lists; an unknown subcommand stays an error."""
    home = tmp_path / "home"
    proc = _tether([group], home)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith(f"Usage: tether {group} ") and "Commands" in proc.stdout
    bad = _tether([group, "bogus"], home)
    assert bad.returncode == 1 and "No such command 'bogus'" in bad.stderr


def test_an_unknown_local_model_names_the_ones_there_are(tmp_path: Path) -> None:
    """The trial's `--model local/nosuch` said only "no model file at nosuch"."""
    proc = _tether(["run", "--no-session", "--model", "local/nosuch", "hi"], tmp_path / "home")
    assert proc.returncode == 1 and "no model file at nosuch" in proc.stderr
    assert "smollm2-135m-instruct" in proc.stderr and "qwen2.5-coder-0.5b" in proc.stderr
    _one_clean_line(proc.stderr)


def test_chat_on_a_session_another_process_writes_is_one_line(tmp_path: Path) -> None:
    """The third trial: `tether chat --resume S` while a `tether run` wrote S opened a screen
    where every prompt was answered `no agent` and dropped."""
    from tether.session import SessionStore

    home = tmp_path / "home"
    store = SessionStore(home / "sessions")
    writer = store.create("busy1", cwd=str(tmp_path))
    try:
        proc = _tether(["chat", "--resume", "busy1"], home)
    finally:
        writer.close()
    assert proc.returncode == 1, proc.stderr
    assert proc.stderr.strip() == "tether: session busy1 is being written by another process"
    again = _tether(["chat", "--resume", "busy1"], home)  # free again: on to the terminal check
    assert "needs a terminal" in again.stderr, again.stderr

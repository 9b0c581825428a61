"""`tether run PROMPT` with piped stdin (docs/cli.md, stdin grammar): plain text stdin is sent
after the prompt (`cat log | tether run "summarize"`, as Claude Code's `-p`); stdin that the
grammar reads as JSON (a context, message lines) is ignored with one line saying so. A real
`tether run` process (stdin a pipe) against a loopback model server."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from kit.cli import tether
from kit.faultserver import FaultServer, text

LOG = "ERROR disk full on /var\nWARN retrying @notes.txt in 5 s\n"


def _user_text(request: dict[str, Any]) -> str:
    users = [m for m in request["body"]["messages"] if m["role"] == "user"]
    content = users[-1]["content"]
    if isinstance(content, str):
        return content
    return "\n".join(p.get("text", "") for p in content)


def _run(tmp: Path, server: FaultServer, stdin: str) -> tuple[int, str]:
    args = ["run", "--no-session", "--model", "openai/m", "--base-url", server.openai_url]
    done = tether(
        [*args, "summarize"],
        tmp / "home",
        input=stdin,
        OPENAI_API_KEY="sk-test",
        TETHER_CONFIG_DIR=str(tmp / "cfg"),
    )
    return done.returncode, done.stderr


def test_plain_text_stdin_follows_the_prompt(tmp_path: Path) -> None:
    (tmp_path / "work").mkdir()
    (tmp_path / "work" / "notes.txt").write_text("secret notes\n")
    with FaultServer([text("ok")]) as server:
        code, stderr = _run(tmp_path, server, LOG)
        sent = _user_text(server.requests[0])
    assert code == 0, stderr
    assert sent.startswith("summarize\n\nERROR disk full on /var\n"), sent
    assert "ERROR disk full on /var" in sent and "WARN retrying" in sent
    assert "secret notes" not in sent  # an `@word` in the piped text attaches nothing
    assert "stdin ignored" not in stderr
    assert "@notes.txt on stdin attaches nothing" in stderr  # and one line says so


def test_an_at_word_in_a_prompt_read_from_stdin_is_noted(tmp_path: Path) -> None:
    """The trial's `echo "stdin @notes.txt" | tether run` sent the bare word and said
    nothing; a word naming no file is no mention (an e-mail, a handle) and is not noted."""
    (tmp_path / "work").mkdir()
    (tmp_path / "work" / "notes.txt").write_text("secret notes\n")
    args = ["run", "--no-session", "--model", "openai/m"]
    with FaultServer([text("ok"), text("ok")]) as server:
        cfg = str(tmp_path / "cfg")
        done = tether([*args, "--base-url", server.openai_url], tmp_path / "home",
                      input="read @notes.txt please", OPENAI_API_KEY="sk-test",
                      TETHER_CONFIG_DIR=cfg)  # fmt: skip
        other = tether([*args, "--base-url", server.openai_url], tmp_path / "home",
                       input="ask @nobody about it", OPENAI_API_KEY="sk-test",
                       TETHER_CONFIG_DIR=cfg)  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "@notes.txt on stdin attaches nothing" in done.stderr
    assert other.returncode == 0 and "attaches nothing" not in other.stderr


def test_json_stdin_beside_a_prompt_is_ignored_and_said_so(tmp_path: Path) -> None:
    context = json.dumps({"messages": [{"role": "user", "content": "other task"}]})
    with FaultServer([text("ok")]) as server:
        code, stderr = _run(tmp_path, server, context)
        sent = _user_text(server.requests[0])
    assert code == 0, stderr
    assert sent == "summarize"
    assert [ln for ln in stderr.splitlines() if "stdin ignored" in ln] != [], stderr


def test_no_stdin_leaves_the_prompt_alone(tmp_path: Path) -> None:
    with FaultServer([text("ok")]) as server:
        code, stderr = _run(tmp_path, server, "")
        sent = _user_text(server.requests[0])
    assert code == 0, stderr
    assert sent == "summarize" and "stdin" not in stderr


def _run_with(tmp: Path, server: FaultServer, stdin: str, *extra: str) -> tuple[int, str]:
    args = ["run", "--no-session", "--model", "openai/m", "--base-url", server.openai_url]
    done = tether(
        [*args, *extra, "review a.py"],
        tmp / "home",
        input=stdin,
        OPENAI_API_KEY="sk-test",
        TETHER_CONFIG_DIR=str(tmp / "cfg"),
    )
    return done.returncode, done.stderr


def test_no_stdin_flag_leaves_a_loops_input_unread_and_appending_is_said(tmp_path: Path) -> None:
    """The third trial: `while read f; do tether run "review $f"; done < files.txt` read the
    rest of the loop's input into the first prompt, and the loop ran once, silently."""
    with FaultServer([text("ok"), text("ok")]) as server:
        code, stderr = _run_with(tmp_path, server, "notes.txt\nbig.txt\n", "--no-stdin")
        alone = _user_text(server.requests[0])
        code2, stderr2 = _run_with(tmp_path, server, "notes.txt\nbig.txt\n")
        appended = _user_text(server.requests[1])
    assert code == 0, stderr
    assert alone == "review a.py" and "stdin" not in stderr, stderr
    assert code2 == 0, stderr2
    assert appended == "review a.py\n\nnotes.txt\nbig.txt\n"
    assert "tether: note: 2 lines of stdin added after the prompt (--no-stdin leaves stdin alone)" in stderr2.splitlines()


def test_binary_stdin_is_refused_and_nothing_is_sent(tmp_path: Path) -> None:
    with FaultServer([text("ok"), text("ok")]) as server:
        code, stderr = _run_with(tmp_path, server, "PK\x03\x04\x00\x00binary")
        args = ["run", "--no-session", "--model", "openai/m", "--base-url", server.openai_url]
        alone = tether(args, tmp_path / "home", input="\x00\x01\x02", OPENAI_API_KEY="sk-test",
                       TETHER_CONFIG_DIR=str(tmp_path / "cfg"))  # fmt: skip
        sent = list(server.requests)
    assert code == 5, stderr
    said = [ln for ln in stderr.splitlines() if "NUL" in ln]
    assert said == ["tether: malformed input: stdin holds NUL bytes (binary data, not text): "
                    "nothing sent (attach a file as @path instead)"], stderr  # fmt: skip
    assert alone.returncode == 5 and "NUL bytes" in alone.stderr
    assert sent == []


def test_stdin_that_is_not_utf8_is_named() -> None:
    from tether.cli.stdin import binary_why

    raw = b"caf\xe9 au lait".decode("utf-8", "surrogateescape")  # as sys.stdin reads it
    assert binary_why(raw) == "stdin is not UTF-8 text"
    assert binary_why("café\n") is None

"""`tether sessions export ID --format md|html|jsonl [-o FILE]`, in process: stdout or a file,
a secret in the environment masked as tool output masks it, and bad input as one line, exit 1."""

from __future__ import annotations

import json
from html.parser import HTMLParser
from pathlib import Path

from kit.cli import run_cli
from tether.messages import TextBlock, ToolCallBlock, ToolResultBlock, Turn
from tether.session import SessionStore

KEY = "sk-proj-" + "Zx9" * 10


def stored(home: Path) -> None:
    with SessionStore(home / "sessions").create(session_id="s1", cwd="/w") as w:
        w.append(Turn(id="u1", role="user", content=(TextBlock(text="print the key"),)))
        w.append(
            Turn(
                id="a1",
                role="assistant",
                content=(ToolCallBlock(id="c1", name="bash", arguments={"command": "env"}),),
            )
        )
        w.append(
            Turn(
                id="u2",
                role="user",
                content=(ToolResultBlock(tool_call_id="c1", content=(TextBlock(text=KEY),)),),
            )
        )


def test_markdown_on_stdout_with_the_key_masked(tmp_path: Path) -> None:
    home = tmp_path / "home"
    stored(home)
    proc = run_cli(["sessions", "export", "s1"], home, OPENAI_API_KEY=KEY)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("# Session s1\n")
    assert KEY not in proc.stdout and "[REDACTED]" in proc.stdout


def test_html_and_jsonl_to_files(tmp_path: Path) -> None:
    home = tmp_path / "home"
    stored(home)
    page, lines = tmp_path / "s1.html", tmp_path / "s1.jsonl"
    html = run_cli(["sessions", "export", "s1", "--format", "html", "-o", str(page)], home)
    jl = run_cli(["sessions", "export", "s1", "-f", "jsonl", "--output", str(lines)], home)
    assert html.returncode == 0 and jl.returncode == 0, html.stderr + jl.stderr
    assert html.stdout == "" and html.stderr.strip() == f"tether: wrote {page}"
    parser = HTMLParser()
    parser.feed(page.read_text())
    assert "<details" in page.read_text() and KEY not in page.read_text()
    rows = [json.loads(x) for x in lines.read_text().splitlines()]
    assert [r["type"] for r in rows] == ["session", "turn", "turn", "turn"]


def test_unknown_id_or_format_is_one_line_exit_1(tmp_path: Path) -> None:
    home = tmp_path / "home"
    stored(home)
    missing = run_cli(["sessions", "export", "nope"], home)
    fmt = run_cli(["sessions", "export", "s1", "--format", "pdf"], home)
    assert missing.returncode == 1 and fmt.returncode == 1
    assert len(missing.stderr.strip().splitlines()) == 1 and missing.stdout == ""
    assert fmt.stderr.strip() == "tether: --format 'pdf': give one of md, html, jsonl"


def test_a_reply_cancelled_before_any_text_is_said_not_an_empty_heading(tmp_path: Path) -> None:
    """The trial's export showed an empty `## Assistant` for a prompt cancelled before any
    reply (an empty assistant turn, stop reason interrupted): one line says what happened."""
    home = tmp_path / "home"
    store = SessionStore(home / "sessions")
    with store.create("c1", cwd=str(tmp_path)) as w:
        w.append(Turn(id="u1", role="user", content=(TextBlock(text="do it"),)))
        w.append(Turn(id="a1", role="assistant", content=(), stop_reason="interrupted"))
        w.append(Turn(id="u2", role="user", content=(TextBlock(text="again"),)))
        w.append(Turn(id="a2", role="assistant", content=(TextBlock(text="ok"),)))
    md = run_cli(["sessions", "export", "c1", "-f", "md"], home, cwd=tmp_path)
    assert md.returncode == 0, md.stderr
    assert md.stdout.count("## Assistant") == 1 and "cancelled before any reply" in md.stdout
    page = tmp_path / "c1.html"
    html = run_cli(["sessions", "export", "c1", "-f", "html", "-o", str(page)], home, cwd=tmp_path)
    assert html.returncode == 0, html.stderr
    text = page.read_text()
    assert text.count('class="turn assistant"') == 1 and "cancelled before any reply" in text

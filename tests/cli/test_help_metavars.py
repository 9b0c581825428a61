"""Every command's `--help` names values as click does (`PATH`, `TEXT`, `INTEGER`, a command's
own `ID`, `NAME`, …) and arguments by name (`PROMPT`), never typer's Python types: the help
showed `--add-dir <list[str]>`, `-i, --image <list[Path]>`, `prompt <str>`."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import typer

from kit.cli import run_cli
from tether.cli.main import app

_LEAK = re.compile(r"<[^>\s]*>")  # `<str>`, `<list[Path]>`, `<int range>`'s first half...


def _paths(command: Any, path: tuple[str, ...] = ()) -> Iterator[tuple[str, ...]]:
    yield path
    for name, sub in sorted(getattr(command, "commands", {}).items()):
        if not sub.hidden:
            yield from _paths(sub, (*path, name))


def _first_column(help_text: str) -> list[str]:
    """The names column of the Arguments and Options sections (what a type would follow)."""
    out: list[str] = []
    section = ""
    for line in help_text.splitlines():
        if line and not line[0].isspace():
            section = line
        elif section in ("Arguments:", "Options:") and re.match(r"  \S", line):
            out.append(re.split(r"\s{2,}", line.strip())[0])
    return out


def test_no_help_shows_a_python_type(tmp_path: Path) -> None:
    paths = list(_paths(typer.main.get_command(app)))
    assert ("run",) in paths and ("sessions", "export") in paths and len(paths) > 30
    for path in paths:
        proc = run_cli([*path, "--help"], tmp_path / "home")
        assert proc.returncode == 0, (path, proc.stderr)
        names = _first_column(proc.stdout)
        assert names, (path, proc.stdout)
        leaks = [n for n in names if _LEAK.search(n) or " <" in n]
        assert not leaks, (path, leaks)
        assert not re.search(r"<(str|int|float|bool|path|list\[)", proc.stdout), path


def test_values_are_named_as_click_names_them(tmp_path: Path) -> None:
    run = run_cli(["run", "--help"], tmp_path / "home").stdout
    for shown in ("  PROMPT  ", "--add-dir PATH", "--image FILE", "--cwd PATH",
                  "--max-turns INTEGER", "--max-budget-usd FLOAT", "--model TEXT",
                  "--session ID", "--timeout DURATION"):  # fmt: skip
        assert shown in run, shown
    assert "Usage: tether run [OPTIONS] [PROMPT]" in run
    export = run_cli(["sessions", "export", "--help"], tmp_path / "home").stdout
    assert "SESSION_ID  [required]" in export and "-o, --output PATH" in export

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


def test_dash_h_is_help_everywhere_and_version_prints_it(tmp_path: Path) -> None:
    """A new user's reflexes (`tether -h`, `tether run -h`, `tether --version`): each was
    `No such option`. `-h` is `--help` for every command (inherited from the group), and
    `--version` / `-V` print the installed version and exit 0."""
    from importlib.metadata import version

    for path in ((), ("run",), ("sessions", "export")):
        short = run_cli([*path, "-h"], tmp_path / "home")
        assert short.returncode == 0, (path, short.stderr)
        assert short.stdout == run_cli([*path, "--help"], tmp_path / "home").stdout
    for flag in ("--version", "-V"):
        shown = run_cli([flag], tmp_path / "home")
        assert (shown.returncode, shown.stdout) == (0, f"tether {version('tether')}\n")

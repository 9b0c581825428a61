"""The options `tether chat`, `tether run` and `tether compact` share, declared once.

Owns: the `Annotated` option types (`ModelOption`, `BaseUrlOption`, …) and `version_option`
(`tether --version`). Does not own: the commands (`tether.cli.main`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

ModelOption = Annotated[
    str | None, typer.Option("--model", "-m", help="provider/model, e.g. local, openai/gpt-4o.")
]
BaseUrlOption = Annotated[
    str | None, typer.Option(help="Endpoint for an OpenAI-compatible server.")
]
CwdOption = Annotated[Path, typer.Option(help="Working folder the tools are confined to.")]
SafeOption = Annotated[
    bool, typer.Option("--safe", help="Safe mode: only read-only tools (read, ls, glob, grep).")
]
NetworkOption = Annotated[
    bool, typer.Option("--network", help="Let sandboxed tool commands use the network.")
]
EffortOption = Annotated[
    str | None,
    typer.Option(help="Reasoning effort: low | medium | high | max (setting: run.effort)."),
]
AddDirOption = Annotated[
    list[str] | None,
    typer.Option(
        "--add-dir",
        metavar="PATH",
        help="Also let the tools use this folder (repeatable; PATH:ro read-only).",
    ),
]
WorktreeOption = Annotated[
    str | None,
    typer.Option(
        "--worktree",
        "-w",
        metavar="NAME",
        help="Work in a new git worktree .tether/worktrees/NAME on branch tether/NAME; "
        "removed at exit when unchanged.",
    ),
]
NameOption = Annotated[
    str | None,
    typer.Option(metavar="NAME", help="Name the session (--resume NAME finds it again)."),
]
PlanOption = Annotated[
    bool, typer.Option("--plan", help="Plan mode: read-only tools, the agent ends with a plan.")
]


def _print_version(value: bool) -> None:
    if value:
        from importlib.metadata import PackageNotFoundError, version

        try:
            print(f"tether {version('tether')}")
        except PackageNotFoundError:  # a source tree on PYTHONPATH, not installed
            print("tether (not installed)")
        raise typer.Exit(0)


VersionOption = Annotated[
    bool,
    typer.Option(
        "--version",
        "-V",
        is_eager=True,
        callback=_print_version,
        help="Print tether's version and exit.",
    ),
]

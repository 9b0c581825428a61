"""The CLI's output channels: JSON events on stdout, diagnostics on stderr.

Owns: `err` (one `tether: ...` line on stderr), `fail` (that line, then exit 1: for the
settings and MCP commands), `clean_text` (input bytes made valid UTF-8),
`EventWriter` (events as JSON lines; a closed stdout stops events, not the run),
`stdout_gone` / `drop_stdout` / `TetherGroup` (a reader that went away: `| head -1`; and the
help's metavars, `set_metavars`).
"""

from __future__ import annotations

import contextlib
import os
import select
import sys
from pathlib import PurePath
from typing import TYPE_CHECKING, Any, get_args, get_origin

import typer
from typer.core import TyperArgument, TyperGroup, TyperOption

from tether.errors import StdoutClosed

if TYPE_CHECKING:  # imported on use: `tether --help` must not build the event codec
    from tether.agent.events import AgentEvent

EXIT_OK, EXIT_USAGE, EXIT_AUTH, EXIT_MALFORMED, EXIT_CANCELLED = 0, 1, 2, 5, 130
"""Exit codes of the headless CLI (the rest come from `tether.errors.exit_code_for`)."""


def clean_text(text: str) -> str:
    """Undecodable input bytes (surrogate escapes) become U+FFFD, so the session stays UTF-8."""
    return text.encode("utf-8", "surrogateescape").decode("utf-8", "replace")


def err(message: str) -> None:
    print(f"tether: {message}", file=sys.stderr, flush=True)


def fail(exc: Exception) -> typer.Exit:
    """Say `exc` on stderr (one line) and return the exit-1 exception to raise (`raise
    fail(exc) from None`)."""
    err(str(exc))
    return typer.Exit(EXIT_USAGE)


def stdout_gone() -> bool:
    """Whether stdout is a pipe whose reader went away (`tether … | head -1` after `head`
    ended): a `BrokenPipeError` from writing to something else (a child's stdin) is not."""
    try:
        fd = sys.stdout.fileno()
        poller = select.poll()
        poller.register(fd, select.POLLOUT)
        return any(events & select.POLLERR for _, events in poller.poll(0))
    except (AttributeError, OSError, ValueError):  # no real stdout, or a closed file object
        return sys.stdout is None or sys.stdout.closed


def drop_stdout(line: str) -> None:
    """Say `stdout closed: LINE` on stderr and point stdout at devnull, so nothing written
    later (the interpreter's exit flush included) fails again."""
    err(f"stdout closed: {line}")
    with contextlib.suppress(OSError, ValueError, AttributeError):
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())


class _NamedArgument(TyperArgument):
    """An argument its help names by its metavar alone (`PROMPT`), without typer's `<str>`."""

    def display_type_rich(self, ctx: Any) -> str | None:
        return None


_NAMES: dict[type, str] = {str: "TEXT", int: "INTEGER", float: "FLOAT", bool: "BOOLEAN"}


def _metavar(desc: Any) -> str:
    """Click's name for a value of typer's type descriptor `desc`, the field's habit: `TEXT`,
    `INTEGER`, `FLOAT`, `PATH` (`FILE`, `DIR`), `[a|b]` for a choice (a range's bounds, a
    default, are in the help already; a repeatable option says so in its help)."""
    if desc.is_choice and desc.choices:
        return "[" + "|".join(str(getattr(c, "value", c)) for c in desc.choices) + "]"
    if desc.is_path:
        return str(desc.path_type).upper()
    annotation: object = desc.annotation
    if get_origin(annotation) in (list, tuple):
        args = [a for a in get_args(annotation) if a is not Ellipsis]
        annotation = args[0] if args else str
    if isinstance(annotation, type) and issubclass(annotation, PurePath):
        return "PATH"
    for kind, name in _NAMES.items():
        if isinstance(annotation, type) and issubclass(annotation, kind):
            return "BOOLEAN" if issubclass(annotation, bool) else name
    return "VALUE"


def set_metavars(command: Any) -> None:
    """Give every option of `command` and its subcommands a click-style metavar and every
    argument its name in capitals: typer's plain help (since it describes types itself)
    otherwise shows Python types (`--add-dir <list[str]>`, `prompt <str>`). A metavar a
    command sets stays."""
    for param in command.params:
        desc = getattr(param, "type_descriptor", None)
        if desc is None:  # a typer before 0.2x: click's own metavars already
            continue
        if isinstance(param, TyperOption) and param.metavar is None:
            param.metavar = _metavar(desc)
        elif isinstance(param, TyperArgument) and not isinstance(param, _NamedArgument):
            param.metavar = param.metavar or (param.name or "value").upper()
            param.__class__ = _NamedArgument
    for sub in getattr(command, "commands", {}).values():
        set_metavars(sub)


class TetherGroup(TyperGroup):
    """The `tether` group: when any command's stdout is closed early (`tether sessions list |
    head -1`), the output stops, one `stdout closed: …` line says so on stderr and the exit
    code is 0, as `tether run`'s events do (`EventWriter`), not click's silent exit 1. Its
    commands' help names values as click does (`set_metavars`)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        set_metavars(self)

    def main(self, *args: Any, **kwargs: Any) -> Any:
        try:
            code = super().main(*args, **kwargs)
            sys.stdout.flush()  # what is still buffered: a reader gone shows here too
        except (StdoutClosed, BrokenPipeError):
            drop_stdout("the reader went away; the output was cut short")
            return EXIT_OK
        return code

    def invoke(self, ctx: Any) -> Any:  # typer._click.Context (typer vendors click)
        try:
            return super().invoke(ctx)
        except BrokenPipeError:
            if not stdout_gone():
                raise
            raise StdoutClosed from None


class EventWriter:
    """Writes events as JSON lines to stdout. If the reader goes away (`| head`, a closed
    stdout), events stop but the run goes on and is persisted."""

    def __init__(self) -> None:
        self.open = sys.stdout is not None

    def __call__(self, event: AgentEvent) -> None:
        if not self.open:
            return
        from tether.agent.events import event_to_json

        try:
            sys.stdout.write(event_to_json(event) + "\n")
            sys.stdout.flush()
        except (BrokenPipeError, ValueError):  # ValueError: write to a closed file
            self.open = False
            drop_stdout("events are no longer written; the session is still persisted")


def usage_line(message: str, command_path: str) -> str:
    """A usage error in one line: `run: No such option: --bogus (see `tether run --help`)`
    (click prints three: the usage, a hint, the error)."""
    first = message.strip().splitlines()[0] if message.strip() else "usage error"
    if not command_path:
        return first
    sub = command_path.split(" ", 1)[1] if " " in command_path else ""
    return f"{sub + ': ' if sub else ''}{first} (see `{command_path} --help`)"


def bare_resume(argv: list[str]) -> list[str]:
    """`tether chat --resume` without an id (last, or before another option) as `--resume=`:
    the session picker (typer has no option with an optional value)."""
    words = [a for a in argv if not a.startswith("-")]
    if not words or words[0] != "chat":
        return argv
    return [
        "--resume=" if a == "--resume" and (i + 1 == len(argv) or argv[i + 1].startswith("-")) else a
        for i, a in enumerate(argv)
    ]

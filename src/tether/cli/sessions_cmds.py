"""`tether sessions ...`: the stored sessions (`tether.session`).

    list [--all] [--limit N] [--format table|json] | show ID | timeline ID [--svg FILE] [--width N] [--height N] | delete ID
    fork ID [--before N]
    checkpoints ID | rewind ID --to N [--files|--conversation] [--force]
    (the last two: `tether.cli.checkpoint_cmds`)
    export ID [--format md|html|jsonl] [-o FILE]

Output: JSON lines on stdout (`list`: one per session, a table on a terminal; `show`: one per
turn), the chart on
stdout (`timeline`), the export on stdout or in a file (`export`), one-line notes on stderr.
Exit codes: 0 ok · 1 an unknown or invalid session id, an unknown export format, an SVG or
export file that cannot be written, a `fork --before N` outside the session's user messages.
"""

from __future__ import annotations

import json
import shutil
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from tether.cli.checkpoint_cmds import sessions_checkpoints, sessions_rewind
from tether.cli.output import EXIT_USAGE, err
from tether.errors import SessionError
from tether.plural import counted

if TYPE_CHECKING:  # the session stack loads with the commands that use it
    from tether.session import LoadedSession

sessions_app = typer.Typer(
    help="List, show, chart, rewind and delete stored sessions.",
    no_args_is_help=True,
    rich_markup_mode=None,
)
sessions_app.command("checkpoints")(sessions_checkpoints)
sessions_app.command("rewind")(sessions_rewind)


@sessions_app.command("list")
def sessions_list(
    all_folders: Annotated[
        bool, typer.Option("--all", "-a", help="Every folder's sessions, not only this one's.")
    ] = False,
    limit: Annotated[
        int | None, typer.Option("--limit", "-n", min=1, help="Show at most N (the newest).")
    ] = None,
    fmt: Annotated[
        str | None,
        typer.Option(
            "--format", "-f", help="table (the default on a terminal) or json (JSON lines)."
        ),
    ] = None,
) -> None:
    """List the sessions started in this folder (`--all`: every folder's), newest first: id,
    last change, messages, name (`--name`, `/rename`), first prompt. A fork counts and previews
    the messages it holds (the parent's up to the fork point, then its own) and names its
    parent (`parent`); a subagent's session names its caller's (`caller`). JSON lines (one per
    session) when stdout is not a terminal, or with `--format json`."""
    from tether.cli.sessions_list import FORMATS, json_row, pick, table_lines
    from tether.session import SessionStore

    fmt = fmt or ("table" if sys.stdout.isatty() else "json")
    if fmt not in FORMATS:
        err(f"--format {fmt!r}: give one of {', '.join(FORMATS)}")
        raise typer.Exit(EXIT_USAGE)
    here = Path.cwd().resolve()
    rows = pick(SessionStore().list(), folder=None if all_folders else here, limit=limit)
    if fmt == "json":
        for info in rows:
            print(json.dumps(json_row(info)))
        return
    if not rows:
        err(f"no sessions started in {here} (--all lists every folder's)")
        return
    width = shutil.get_terminal_size().columns if sys.stdout.isatty() else None  # a pipe: whole
    print("\n".join(table_lines(rows, folders=all_folders, width=width)))


def session_ref(ref: str) -> str:
    """The id of the session `ref` names: an id, else the newest session given that name
    (`--name`; one started in this folder first: `SessionStore.find`), else `ref` itself (its
    load then says there is none). Every `tether sessions` command takes either."""
    from tether.session import SessionStore

    return SessionStore().find(ref, Path.cwd()) or ref


def _load_session(session_id: str) -> LoadedSession:
    """The stored session `session_id` names (an id or a name), its malformed lines reported
    on stderr; an unknown or invalid id is one line and exit 1."""
    from tether.errors import SessionNotFoundError
    from tether.session import SessionStore

    session_id = session_ref(session_id)
    try:
        try:
            loaded = SessionStore().load(session_id)
        except SessionNotFoundError:
            from tether.cli.jobs_views import jobs_store_here

            jobs = jobs_store_here() if session_id.startswith("job.") else None
            if jobs is None:
                raise
            loaded = jobs.load(session_id)  # a Jobs run's session, from the jobs database
    except SessionError as exc:
        err(str(exc))
        raise typer.Exit(EXIT_USAGE) from exc
    if not loaded.report.ok:
        err(loaded.report.describe())
    return loaded


@sessions_app.command("show")
def sessions_show(session_id: str) -> None:
    """Print a session's turns as JSON lines (malformed lines are reported on stderr), then the
    session's summed usage and cost on stderr."""
    from tether.messages import turn_to_dict
    from tether.providers.pricing import turns_usage_line

    loaded = _load_session(session_id)
    for turn in loaded.turns:
        print(json.dumps(turn_to_dict(turn)))
    err(f"usage: {turns_usage_line(loaded.turns)}")


@sessions_app.command("timeline")
def sessions_timeline(
    session_id: str,
    svg: Annotated[
        Path | None, typer.Option("--svg", help="Also write the chart as an SVG file.")
    ] = None,
    width: Annotated[
        int | None, typer.Option(min=30, max=1000, help="Chart width in columns (30-1000).")
    ] = None,
    height: Annotated[int, typer.Option(min=8, max=200, help="Chart height in rows (8-200).")] = 20,
) -> None:
    """Chart tokens per request over a session (prompt incl. cache, and output), with
    compactions, persisted outputs and model switches marked; the marks are listed below."""
    from tether.session.timeline import session_timeline
    from tether.tui.chart import chart_lines, timeline_svg

    loaded = _load_session(session_id)
    if svg is not None and not svg.resolve().parent.is_dir():  # before the chart is drawn
        err(f"cannot write {svg}: {svg.resolve().parent} is not a folder")
        raise typer.Exit(EXIT_USAGE)
    timeline = session_timeline(loaded.turns)
    cols = width or min(max(shutil.get_terminal_size().columns, 40), 160)
    print("\n".join(chart_lines(timeline, width=cols, height=height, color=sys.stdout.isatty())))
    if svg is not None:
        try:
            svg.write_text(timeline_svg(timeline, title=f"session {session_id}", width=cols))
        except OSError as exc:
            err(f"cannot write {svg}: {exc.strerror or exc}")
            raise typer.Exit(EXIT_USAGE) from exc
        err(f"wrote {svg}")


@sessions_app.command("fork")
def sessions_fork(
    session_id: str,
    before: Annotated[
        int | None,
        typer.Option(
            "--before",
            help="Fork before user message N (1: the first); the whole session without it.",
        ),
    ] = None,
) -> None:
    """Fork a session into a new one (the original stays as it is): its whole history, or with
    --before N its history up to user message N, left out with everything after it. The way on
    when a message can never be sent (one too large for the model's window, which each resume
    compacts and stops at). Prints the new session as a JSON line; resume it with
    `tether run --resume NEW_ID`."""
    from tether.agent.turn.checkpoints import synthetic_user_turn
    from tether.checkpoint.timeline import user_turns
    from tether.session import SessionStore

    loaded = _load_session(session_id)
    sid = loaded.header.id
    parent: tuple[str, str] | None = None
    kept = len(loaded.turns)
    if before is None:
        if loaded.last_entry_id is not None:
            parent = (sid, loaded.last_entry_id)
    else:
        turns = user_turns(loaded.turns, synthetic_user_turn)
        if not 1 <= before <= len(turns):
            span = f"1..{len(turns)}" if turns else "none"
            err(f"--before {before} is outside session {sid}'s user messages ({span})")
            raise typer.Exit(EXIT_USAGE)
        kept = turns[before - 1].index
        if kept > 0:
            parent = (sid, loaded.turns[kept - 1].id)
    try:
        writer = SessionStore().create(None, cwd=loaded.header.cwd or ".", parent=parent)
    except SessionError as exc:
        err(str(exc))
        raise typer.Exit(EXIT_USAGE) from exc
    writer.close()
    print(json.dumps({"session": writer.id, "parent": sid, "before": before, "turns": kept}))
    err(f"forked {sid} into {writer.id} ({counted(kept, 'message')}); go on with: tether run --resume {writer.id}")


@sessions_app.command("delete")
def sessions_delete(session_id: str) -> None:
    """Delete a session's file, its whole artifact folder and its legacy artifact folders
    (best effort: what cannot be removed is counted, named, and the exit code is 1). Its forks
    (rewinds, `/fork`) first get their own copy of the history they read from it, so deleting
    a session never breaks another; the line says which."""
    from tether.session import SessionStore

    session_id = session_ref(session_id)
    try:
        report = SessionStore().delete(session_id)
    except SessionError as exc:
        err(str(exc))
        raise typer.Exit(EXIT_USAGE) from exc
    if report.errors:
        n = len(report.errors)
        err(
            f"deleted {session_id}, but {n} entr{'y' if n == 1 else 'ies'} could not be removed "
            f"(first: {report.errors[0]})"
        )
        raise typer.Exit(EXIT_USAGE)
    err(f"deleted {session_id}{_forks_note(report.detached, report.broken_forks)}")


def _forks_note(detached: tuple[str, ...], broken: tuple[str, ...]) -> str:
    """What `sessions delete` did to the deleted session's forks, for its one line."""
    parts: list[str] = []
    if detached:
        n = len(detached)
        parts.append(
            f"{n} fork{'' if n == 1 else 's'} now keep{'s' if n == 1 else ''} "
            f"{'its' if n == 1 else 'their'} own copy: {', '.join(detached)}"
        )
    if broken:
        parts.append(f"left as they were (their history did not load already): {', '.join(broken)}")
    return "; " + "; ".join(parts) if parts else ""


def _export_redactor() -> Callable[[str], str]:
    """Masks what tool output masks: the values of the variables tools never see (the
    settings' `tools.refused_env` and providers' `api_key_env` of the current folder, else the
    built-in list) and secret-shaped strings (`tether.tools.env.redact_secrets`)."""
    from tether.errors import ConfigError
    from tether.settings import load_config
    from tether.tools.env import DEFAULT_REFUSED, redact_secrets, secret_values

    try:
        refused = load_config(Path.cwd()).refused_env()
    except ConfigError:
        refused = list(DEFAULT_REFUSED)
    values = secret_values(refused=refused)
    return lambda text: redact_secrets(text, values)


@sessions_app.command("export")
def sessions_export(
    session_id: str,
    fmt: Annotated[
        str, typer.Option("--format", "-f", help="md | html (one self-contained page) | jsonl.")
    ] = "md",
    output: Annotated[
        Path | None, typer.Option("--output", "-o", help="Write to this file (default: stdout).")
    ] = None,
) -> None:
    """Export a session as a Markdown transcript, a self-contained HTML page (tool calls and
    thinking collapsible, code highlighted, images inline, compactions marked, usage and cost)
    or JSON lines; secrets are masked as in tool output."""
    from tether.session.export import EXPORT_FORMATS, export_session

    if fmt not in EXPORT_FORMATS:
        err(f"--format {fmt!r}: give one of {', '.join(EXPORT_FORMATS)}")
        raise typer.Exit(EXIT_USAGE)
    loaded = _load_session(session_id)
    text = export_session(loaded, fmt, redact=_export_redactor())
    if output is None:
        sys.stdout.write(text)
        return
    try:
        output.write_text(text, encoding="utf-8")
    except OSError as exc:
        err(f"cannot write {output}: {exc.strerror or exc}")
        raise typer.Exit(EXIT_USAGE) from exc
    err(f"wrote {output}")

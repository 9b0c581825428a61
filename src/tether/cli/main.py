"""The `tether` command line (typer).

Owns: argument parsing, the headless JSONL event stream on stdout (diagnostics on stderr only),
exit codes, signal handling. The command groups are `tether.cli.sessions_cmds`,
`settings_cmds`, `mcp_cmds` and `jobs_cmds`.

A closed stdout (`tether sessions list | head -1`): one line, exit 0 (`output.TetherGroup`).
Exit codes: 0 success · 1 usage/other · 2 auth · 3 network · 4 provider error · 5 malformed input ·
124 `tether run --timeout` passed · 130 cancelled (SIGINT/SIGTERM/SIGHUP; the partial turn is persisted
first).
"""

from __future__ import annotations

import errno
import sys
from pathlib import Path
from typing import Annotated, Any

import typer

from tether.cli import cancel
from tether.cli.jobs_cmds import jobs_app
from tether.cli.mcp_cmds import mcp_app
from tether.cli.models_cmd import models
from tether.cli.options import (
    AddDirOption,
    BaseUrlOption,
    CwdOption,
    EffortOption,
    ModelOption,
    NameOption,
    NetworkOption,
    PlanOption,
    SafeOption,
    VersionOption,
    WorktreeOption,
)
from tether.cli.output import (
    EXIT_AUTH,
    EXIT_CANCELLED,
    EXIT_OK,
    EXIT_USAGE,
    TetherGroup,
    err,
    usage_line,
)
from tether.cli.output import (
    bare_resume as bare_resume,
)
from tether.cli.permissions_cmds import permissions_app
from tether.cli.sessions_cmds import sessions_app
from tether.cli.settings_cmds import config_app, login, logout
from tether.errors import ConfigError
from tether.plural import counted

# Each command imports what it runs on (the agent stack, providers, pydantic codecs) when it
# runs: `tether --help` and `tether sessions list` stay light (start-up time, bench/startup.py).


app = typer.Typer(
    cls=TetherGroup,
    name="tether",
    help="tether: an agent harness for long sessions. With no command: the interactive session.",
    invoke_without_command=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,  # plain click help: rendering through rich costs ~0.2 s per start-up
    context_settings={"help_option_names": ["-h", "--help"]},  # every command's, inherited
)
app.add_typer(sessions_app, name="sessions")
app.add_typer(config_app, name="config")
app.add_typer(mcp_app, name="mcp")
app.add_typer(jobs_app, name="jobs")
app.add_typer(permissions_app, name="permissions")
app.command()(login)
app.command()(logout)
app.command()(models)


@app.callback()
def _default(ctx: typer.Context, version: VersionOption = False) -> None:
    """With no subcommand, `tether` opens the interactive session (as `tether chat`)."""
    if ctx.invoked_subcommand is None:
        raise typer.Exit(_chat())


@app.command()
def chat(
    model: ModelOption = None,
    base_url: BaseUrlOption = None,
    resume: Annotated[
        str | None,
        typer.Option(
            help="Open this session (id or name) and continue it; without one: a picker."
        ),
    ] = None,
    name: NameOption = None,
    continue_last: Annotated[
        bool,
        typer.Option("--continue", "-c", help="Continue the latest session of this folder."),
    ] = False,
    cwd: CwdOption = Path("."),
    no_session: Annotated[
        bool, typer.Option("--no-session", help="Do not persist the session.")
    ] = False,
    safe: SafeOption = False,
    network: NetworkOption = False,
    approval: Annotated[
        str | None,
        typer.Option(help="ask | auto-edit | read-only | auto (default: tools.approval, ask)."),
    ] = None,
    max_turns: Annotated[
        int | None, typer.Option(min=1, help="Cap on model requests per prompt.")
    ] = None,
    plan: PlanOption = False,
    effort: EffortOption = None,
    add_dir: AddDirOption = None,
    worktree: WorktreeOption = None,
) -> None:
    """The interactive session (a terminal UI; `tether` with no command opens it too)."""
    raise typer.Exit(
        _chat(
            model=model,
            base_url=base_url,
            resume=resume,
            name=name,
            continue_last=continue_last,
            cwd=cwd,
            no_session=no_session,
            safe=safe,
            network=network,
            approval=approval,
            max_turns=max_turns,
            plan=plan,
            effort=effort,
            add_dir=add_dir,
            worktree=worktree,
        )
    )


def _chat(**flags: Any) -> int:
    """Open the TUI (Textual is imported only here: `tether --help` stays light)."""
    from tether.cli.agent_setup import add_dir_override, check_flags, check_model, effort_override
    from tether.errors import AuthError

    try:
        check_flags(flags.get("model"), flags.get("base_url"))
    except ConfigError as exc:
        err(str(exc))
        return EXIT_USAGE
    cwd = Path(flags.pop("cwd", Path("."))).resolve()
    if not cwd.is_dir():
        err(f"--cwd {cwd} is not a folder")
        return EXIT_USAGE
    overrides: dict[str, Any] = {}
    approval = flags.pop("approval", None)
    if approval is not None:
        from tether.agent.approval import APPROVAL_MODES

        if approval not in APPROVAL_MODES:
            err(f"--approval {approval!r}: give one of {', '.join(APPROVAL_MODES)}")
            return EXIT_USAGE
        overrides["tools.approval"] = approval
    max_turns = flags.pop("max_turns", None)
    if max_turns is not None:
        overrides["run.max_turns"] = max_turns
    try:
        overrides.update(effort_override(flags.pop("effort", None)))
        overrides.update(add_dir_override(flags.pop("add_dir", None), cwd))
    except ConfigError as exc:
        err(str(exc))
        return EXIT_USAGE
    if flags.pop("continue_last", False):
        if flags.get("resume") or flags.get("no_session"):
            err("--continue cannot be combined with --resume or --no-session")
            return EXIT_USAGE
        from tether.cli.run import latest_session

        last = latest_session(cwd)
        if last is None:
            err(f"no session to continue in {cwd}")
            return EXIT_USAGE
        flags["resume"] = last
    try:
        flags.update(_chat_session(flags, cwd))
        if flags.get("model") is not None:  # as `tether run` says it, before the screen opens
            check_model(flags["model"], flags.get("base_url"), cwd)
    except ConfigError as exc:
        err(str(exc))
        return EXIT_AUTH if isinstance(exc, AuthError) else EXIT_USAGE
    if not (sys.stdin.isatty() and sys.stdout.isatty()):
        # a full-screen UI on a pipe wrote escape codes into it and waited for keys forever
        err("the interactive session needs a terminal; for a headless run use `tether run`")
        return EXIT_USAGE
    from tether.tui import run_tui
    from tether.tui.opening import ChatOptions

    flags["overrides"] = overrides
    name = flags.pop("worktree", None)
    if name is None:
        return run_tui(ChatOptions(cwd=cwd, **flags))
    from tether.errors import WorktreeError
    from tether.worktrees import close, create, folder_in

    try:
        tree = create(cwd, name)
    except WorktreeError as exc:
        err(str(exc))
        return EXIT_USAGE
    try:
        return run_tui(ChatOptions(cwd=folder_in(tree, cwd), **flags))
    finally:
        err(close(tree))


def _chat_session(flags: dict[str, Any], cwd: Path) -> dict[str, Any]:
    """`--resume` as an id (a name: the newest session so named, this folder's first; empty:
    the picker) and `--name`, checked before the screen opens: one line, as `tether run`
    says it.

    Raises:
        ConfigError: no such session, one another process writes, an unusable name, `--name`
            with `--no-session`.
    """
    from tether.errors import SessionBusyError
    from tether.session import SessionStore
    from tether.session.names import check_free, check_name

    out: dict[str, Any] = {}
    resume = flags.get("resume")
    if flags.get("name") is not None:
        if flags.get("no_session"):
            raise ConfigError("--name names a stored session: it cannot go with --no-session")
        out["name"] = check_name(flags["name"])
        own = SessionStore().find(resume, cwd) if resume else None
        check_free(SessionStore().list(), out["name"], own_id=own)
    if resume == "":
        out.update(resume=None, pick=True)
    elif resume:
        found = SessionStore().find(resume, cwd)
        if found is None:
            raise ConfigError(f"no session {resume} in {SessionStore().root}")
        try:  # another process writes it: one line, not a screen that cannot send
            SessionStore().check_writable(found)
        except SessionBusyError as exc:
            raise ConfigError(str(exc)) from None
        out["resume"] = found
    return out


@app.command()
def run(
    prompt: Annotated[
        str | None, typer.Argument(help="The task. Read from stdin when omitted.")
    ] = None,
    model: ModelOption = None,
    base_url: BaseUrlOption = None,
    max_turns: Annotated[
        int | None, typer.Option(min=1, help="Cap on model requests (default: run.max_turns, 50).")
    ] = None,
    session: Annotated[
        str | None, typer.Option(metavar="ID", help="Persist under this new session id.")
    ] = None,
    resume: Annotated[
        str | None, typer.Option(help="Replay this session (id or name), then continue it.")
    ] = None,
    system: Annotated[
        str | None, typer.Option(help="Replace tether's default system prompt with this text.")
    ] = None,
    append_system: Annotated[
        str | None, typer.Option(help="Add this text at the end of the system prompt.")
    ] = None,
    print_system: Annotated[
        bool,
        typer.Option(
            "--print-system", help="Print the system prompt the run would send; run nothing."
        ),
    ] = False,
    continue_last: Annotated[
        bool,
        typer.Option("--continue", "-c", help="Continue the latest session of this folder."),
    ] = False,
    cwd: CwdOption = Path("."),
    no_session: Annotated[
        bool, typer.Option("--no-session", help="Do not persist the run.")
    ] = False,
    safe: SafeOption = False,
    network: NetworkOption = False,
    no_compact: Annotated[
        bool, typer.Option("--no-compact", help="Disable automatic compaction.")
    ] = False,
    context_window: Annotated[
        int | None,
        typer.Option(min=256, help="The model's context window in tokens (default: known table)."),
    ] = None,
    plan: Annotated[
        bool, typer.Option("--plan", help="Plan mode: read-only tools; print the plan (an event).")
    ] = False,
    max_budget_usd: Annotated[
        float | None,
        typer.Option(
            min=0.000001, help="Stop before a request that would pass this many US dollars."
        ),
    ] = None,
    image: Annotated[
        list[Path] | None,
        typer.Option("--image", "-i", metavar="FILE", help="Attach an image (repeatable; also @x.png)."),
    ] = None,
    output_format: Annotated[
        str | None,
        typer.Option(
            help="stream-json (events as they come; the default) | json (one result at the "
            "end) | text (the answer only). Setting: run.output_format."
        ),
    ] = None,
    tools: Annotated[
        str | None,
        typer.Option(
            "--tools", help="Offer only these tools, comma-separated (setting: tools.only)."
        ),
    ] = None,
    timeout: Annotated[
        str | None,
        typer.Option(
            "--timeout",
            metavar="DURATION",
            help="Time limit of the whole run: 600 (seconds) or 10m; past it the run is cancelled and "
            "exits 124 (setting: run.timeout).",
        ),
    ] = None,
    effort: EffortOption = None,
    add_dir: AddDirOption = None,
    worktree: WorktreeOption = None,
    name: NameOption = None,
    output_schema: Annotated[
        str | None,
        typer.Option(
            "--output-schema",
            metavar="FILE|JSON",
            help="The final answer must be JSON valid under this JSON Schema (a file, or the "
            "schema inline); the run asks again, then exits 1 (setting: run.output_schema).",
        ),
    ] = None,
    max_tool_calls: Annotated[
        int | None,
        typer.Option(
            min=0,
            help="Stop before the tool call that would pass this many (setting: "
            "run.max_tool_calls).",
        ),
    ] = None,
    token: Annotated[
        str | None,
        typer.Option(
            help="The API key for --model's provider (@FILE: read it from a file, e.g. "
            "@/dev/fd/3); never stored, never in the tools' environment.",
        ),
    ] = None,
    log_level: Annotated[str | None, typer.Option(help="Log lines on stderr from: debug | info | warning | error (log.level).")] = None,
    no_stdin: Annotated[bool, typer.Option("--no-stdin", help="Do not read stdin (a `while read` loop, ssh, CI): the prompt argument alone.")] = False,
) -> None:
    """Run the agent headless: events as JSON lines on stdout (or one result: --output-format),
    diagnostics on stderr."""
    from tether.cli.agent_setup import ContextOptions
    from tether.cli.run import RunOptions, run_command

    raise typer.Exit(
        run_command(
            RunOptions(
                prompt=prompt,
                model=model,
                base_url=base_url,
                max_turns=max_turns,
                session_id=session,
                resume=resume,
                system=system,
                append_system=append_system,
                print_system=print_system,
                continue_last=continue_last,
                cwd=cwd,
                no_session=no_session,
                safe=safe,
                network=network,
                context=ContextOptions(enabled=not no_compact, context_window=context_window),
                plan=plan,
                max_budget_usd=max_budget_usd,
                images=tuple(image or ()),
                output_format=output_format,
                tools=tools,
                timeout=timeout,
                effort=effort,
                add_dirs=tuple(add_dir or ()),
                worktree=worktree,
                name=name,
                output_schema=output_schema,
                max_tool_calls=max_tool_calls,
                token=token,
                log_level=log_level,
                no_stdin=no_stdin,
            )
        )
    )


@app.command("tool")
def tool_cmd(
    name: Annotated[str | None, typer.Argument(help="The tool to call.")] = None,
    json_args: Annotated[str | None, typer.Option("--json", help='Its arguments as a JSON object: \'{"path": "a.txt"}\'.')] = None,
    list_tools: Annotated[bool, typer.Option("--list", help="List the tools (secret ones marked); call none.")] = False,
    cwd: CwdOption = Path("."),
    model: ModelOption = None,
    base_url: BaseUrlOption = None,
) -> None:
    """Call one tool yourself, secret ones included: its result on stdout (an error: stderr,
    exit 1). The tools and their sandbox are those `tether run` has in this folder."""
    from tether.cli.tool_cmd import tool_command

    code = tool_command(name, json_args, list_tools=list_tools, cwd=cwd, model=model, base_url=base_url)
    raise typer.Exit(code)


@app.command()
def acp(
    model: ModelOption = None,
    add_dir: AddDirOption = None,
    log_level: Annotated[str | None, typer.Option(help="Log lines on stderr from this level.")] = None,
) -> None:
    """Serve the Agent Client Protocol on stdin/stdout (Zed, JetBrains, Neovim clients)."""
    from tether.acp.stdio import serve
    from tether.cli import logsink
    from tether.cli.agent_setup import add_dir_override

    try:
        overrides = add_dir_override(add_dir, Path.cwd())
        logsink.install(logsink.level_for(log_level, None), propagate=False)
    except ConfigError as exc:
        err(str(exc))
        raise typer.Exit(EXIT_USAGE) from None
    raise typer.Exit(serve(model=model, overrides=overrides))


@app.command()
def compact(
    session_id: Annotated[str, typer.Argument(help="The stored session to compact: its id or its name.")],
    focus: Annotated[str | None, typer.Option(help="What the summary must keep.")] = None,
    model: Annotated[
        str | None, typer.Option("--model", "-m", help="provider/model writing the summary.")
    ] = None,
    base_url: BaseUrlOption = None,
    context_window: Annotated[
        int | None, typer.Option(min=256, help="The summarizing model's window, in tokens.")
    ] = None,
    keep_turns: Annotated[int, typer.Option(min=0, help="Recent turns kept verbatim.")] = 0,
) -> None:
    """Compact a stored session: append a summary marker; print tokens before/after as JSON."""
    from tether.cli.compact import compact_command

    raise typer.Exit(
        compact_command(
            session_id,
            focus=focus,
            model=model,
            base_url=base_url,
            context_window=context_window,
            keep_turns=keep_turns,
            err=err,
        )
    )


@app.command()
def replay(
    session: Annotated[
        str, typer.Argument(help="A stored session id, a session file, or a transcript file.")
    ],
    from_turn: Annotated[
        int, typer.Option("--from", min=1, help="Start at this assistant turn (1-based).")
    ] = 1,
    tools: Annotated[
        str | None,
        typer.Option(
            help="run: re-execute tools in a scratch copy of the folder; stored: serve the "
            "stored results (default: run, or stored for a transcript)."
        ),
    ] = None,
    target: Annotated[
        list[str] | None,
        typer.Option(
            help="anthropic, openai-chat, openai-responses, google or ollama (repeatable; "
            "default: all)."
        ),
    ] = None,
    system: Annotated[
        str | None, typer.Option(help="System prompt sent with each request.")
    ] = None,
) -> None:
    """Re-run a stored session offline: check every request against each target's wire
    contract; print violations, repairs and tool-result differences as JSON lines.
    Exit 0 when there are none, 4 on a violation, 1 on repairs or differences only."""
    from tether.cli.replay import replay_command

    if tools not in (None, "run", "stored"):
        err(f"--tools {tools!r}: run or stored")
        raise typer.Exit(EXIT_USAGE)
    raise typer.Exit(
        replay_command(
            session,
            targets=target or [],
            tools="run" if tools == "run" else "stored" if tools == "stored" else None,
            from_turn=from_turn,
            system=system,
            err=err,
        )
    )


@app.command()
def trust(
    show: Annotated[
        bool, typer.Option("--show", help="List what would be approved; approve nothing.")
    ] = False,
    cwd: Annotated[Path, typer.Option(help="The project folder.")] = Path("."),
) -> None:
    """Approve this project's settings and tool folders (`.tether/`, `tools.folders`) so that
    `tether run` loads them; files changed since are refused until approved again."""
    from tether.settings.trust import approve, check_trust

    root = cwd.resolve()
    if not root.is_dir():
        err(f"--cwd {cwd} is not a folder")
        raise typer.Exit(EXIT_USAGE)
    state = check_trust(root)
    if show:
        for name, what in state.changes:
            print(f"{what}\t{name}")
        for name in state.removed:
            print(f"removed\t{name}")
        for name in state.approved:
            print(f"approved\t{name}")
        err(
            f"{root}: nothing to approve"
            if state.trusted
            else f"{root}: {counted(len(state.changes), 'change')} to approve with `tether trust`"
        )
        return
    try:
        files = approve(root)
    except OSError as exc:
        err(f"cannot store the approval: {exc.strerror or exc}")
        raise typer.Exit(EXIT_USAGE) from exc
    for name, what in state.changes:
        print(f"{what}\t{name}")
    err(f"approved {counted(len(files), 'file')} of {root}")


DISK_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EFBIG, errno.EROFS, errno.EIO})
"""The write errors of the disk itself, said in one line (not a traceback)."""


def main() -> None:
    """Console entry point. Usage errors exit 1 (click's default 2 is our auth code)."""
    try:
        code = app(args=bare_resume(sys.argv[1:]), standalone_mode=False)
    except (typer.Abort, KeyboardInterrupt):  # before a run's own handlers; typer's Abort
        # is what its prompts raise on Ctrl-C / Ctrl-D (typer >= 0.26 vendors its own click,
        # whose Abort is not `click.exceptions.Abort`)
        cancel.say()
        sys.exit(EXIT_CANCELLED)
    except OSError as exc:
        if exc.errno not in DISK_ERRNOS:
            raise
        # a full disk, a quota, a file-size limit: what was written before it stands
        where = f" {exc.filename}" if exc.filename else ""
        err(
            f"cannot write{where}: {exc.strerror}; what was saved before stays (make room, "
            "then `--resume` continues the session)"
        )
        sys.exit(EXIT_USAGE)
    except Exception as exc:
        format_message = getattr(exc, "format_message", None)
        if not callable(format_message):  # not a CLI usage error (typer vendors its own click)
            raise
        ctx = getattr(exc, "ctx", None)
        if type(exc).__name__ == "NoArgsIsHelpError" and ctx is not None:
            print(ctx.get_help())  # `tether jobs` alone: its help, as `git remote` lists
            sys.exit(EXIT_OK)
        err(
            usage_line(
                str(format_message()), getattr(getattr(exc, "ctx", None), "command_path", "")
            )
        )
        sys.exit(EXIT_USAGE)
    if code == EXIT_CANCELLED and cancel.received():
        # typer turns a `KeyboardInterrupt` (a signal during a command's start-up: its lazy
        # imports, the settings, the agent) into a quiet exit 130
        cancel.say()
    sys.exit(code if isinstance(code, int) else EXIT_OK)

"""Running the TUI's slash commands (`/compact`, `/safe`, `/approval`, `/plan`, `/rewind`,
`/effort`, `/add-dir`, `/usage`, `/context`, `/timeline`, `/settings`, `/memory`, `/init`,
`/export`, `/tasks`, `/tool`, `/vim`, `/agents`, `/mcp`, `/permissions`, `/hooks`, `/help`, `/quit`, `!cmd`, `#text`, and the session's own `/name` commands) against the
app's agent (`!cmd` and `/tasks`: `tether.tui.shell_commands`).

Owns: `run_command`. The screens are `tether.tui.panels` (`/context`, `/timeline`),
`tether.tui.views` (`/agents`, `/mcp`, `/permissions`, `/hooks`) and
`tether.tui.settings_screen`; the session's commands (`/model`, `/new`, `/sessions`,
`/resume`, `/rename`, `/fork`) are `tether.tui.session_commands`.
Does not own: parsing and the command list (`tether.tui.commands`), the app.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from tether.agent import user_controls
from tether.agent.approval import APPROVAL_MODES
from tether.agent.sessions import HostOutput
from tether.effort import EFFORTS, Effort, next_effort, parse_effort
from tether.errors import ConfigError, RunError, SessionError
from tether.providers.plan_usage import PlanUsage, plan_usage_of, usage_lines
from tether.providers.pricing import turns_usage_line
from tether.tui.commands import COMMANDS, KEYS
from tether.tui.context_view import cache_line
from tether.tui.host import AppHost
from tether.tui.panels import ContextScreen, TimelineScreen, context_rows_of
from tether.tui.quick_memory import quick_memory
from tether.tui.safety import open_rewind
from tether.tui.session_commands import session_command
from tether.tui.shell_commands import run_bang, tasks
from tether.tui.status import context_figure
from tether.tui.user_commands import INIT_PROMPT, context_lines, memory, run_user_command
from tether.tui.views import VIEWS, open_view
from tether.tui.vim import vim_command
from tether.tui.widgets import UserRow


async def run_command(app: AppHost, name: str, arg: str) -> None:
    """Run `/name arg` in `app`; the outcome is a note in the transcript."""
    if name in ("quit", "exit", "q"):
        await app.action_quit()
        return
    if name == "help":
        lines = [f"{c:<10} {h}" for c, h in COMMANDS] + [""] + [f"{k:<22} {a}" for k, a in KEYS]
        app.note("\n".join(lines))
        return
    if name == "theme":
        app.pick_theme(arg)
        return
    if name == "vim":
        app.note(vim_command(app.prompt_input, arg))
        return
    if app.opened is None:
        app.note("no agent")
        return
    if name == "clear" and name not in app.opened.commands:  # Claude Code's name for it
        name = "new"
    agent = app.agent
    try:
        if name == "compact":
            if app.busy:
                app.note("/compact: wait until the agent is idle (or Esc)")
                return
            app.busy = True
            app.update_status()
            app.worker = app.run_worker(_compact(app, arg or None), group="agent")
        elif name == "safe":
            if arg not in ("on", "off"):
                app.note("usage: /safe on|off")
                return
            agent.set_safe_mode(arg == "on")
            app.note(f"safe mode {arg}")
        elif name == "approval":
            if arg not in APPROVAL_MODES:
                app.note(f"usage: /approval {'|'.join(APPROVAL_MODES)}")
                return
            agent.set_approval_mode(arg)  # pyright: ignore[reportArgumentType]
            app.note(f"approval mode: {arg}")
        elif name in ("model", "new", "sessions", "fork", "resume", "rename"):
            await session_command(app, name, arg)
        elif name == "effort":
            effort_command(app, arg)
        elif name == "add-dir":
            if not arg:
                shown = ", ".join(agent.parts.config.tools.add_dirs) or "none"
                app.note(f"extra folders: {shown} (usage: /add-dir PATH[:ro])")
                return
            app.note(f"added {user_controls.add_dir(agent, arg)}: the tools may use it too")
        elif name == "plan":
            _plan(app, arg)
        elif name == "rewind":
            if app.busy:
                app.note("/rewind: wait until the agent is idle (or Esc)")
                return
            open_rewind(app)
        elif name == "usage":  # the session's tokens, then the plan's limits (Claude Code's)
            history = agent.history
            plan = plan_usage_of(agent.provider)
            shown = "\n".join(usage_lines(plan)) if isinstance(plan, PlanUsage) else plan
            app.note(f"usage: {turns_usage_line(history)}\n{shown}")
        elif name == "context":
            limits = agent.limits
            app.push_screen(
                ContextScreen(
                    context_rows_of(agent),
                    limits.context_window,
                    [*context_lines(agent), cache_line(agent.history)],
                    guessed=limits.source == "default",
                    figure=context_figure(agent),
                )
            )
        elif name == "timeline":
            w, h = app.size
            app.push_screen(TimelineScreen(agent.history, width=w - 8, height=h - 14))
        elif name == "settings":
            app.action_settings()
        elif name == "memory":
            memory(app)
        elif name == "init":
            if app.busy:
                app.note("/init: wait until the agent is idle (or Esc)")
                return
            app.transcript.add(UserRow("/init"))
            app.start_run(INIT_PROMPT)
        elif name == "!":
            run_bang(app, arg)
        elif name == "#":
            quick_memory(app, arg)
        elif name == "tasks":
            await tasks(app, arg)
        elif name in VIEWS and name not in app.opened.commands:
            open_view(app, name)
        elif name in app.opened.commands:
            if not app.busy:
                app.transcript.add(UserRow(f"/{name} {arg}".rstrip()))
            run_user_command(app, app.opened.commands[name], arg)
        elif name == "export":
            _export(app, arg)
        elif name == "copy":
            app.copy_answer(arg)
        elif name == "tool":  # issue 39: the user's own call, secret tools included
            await _tool(app, arg)
        else:
            app.note(f"unknown command /{name}: /help lists them")
    except ConfigError as exc:
        app.note(f"/{name}: {exc}")
    app.update_status()


async def _tool(app: AppHost, arg: str) -> None:
    """`/tool NAME JSON`: call a tool yourself (`tether.tools.direct`); `/tool`: list them."""
    from tether.tools.direct import call_directly, parse_arguments, tool_lines

    parts = app.agent.parts
    name, _, rest = arg.strip().partition(" ")
    if not name:
        app.note("usage: /tool NAME {json arguments}\n" + "\n".join(tool_lines(parts.registry)))
        return
    args, why = parse_arguments(rest)
    if args is None:
        app.note(f"/tool {name}: {why}")
        return
    block = await call_directly(
        parts.registry,
        name,
        args,
        parts.tool_context,
        timeout_s=parts.run.tool_timeout_s,
        redact=parts.redact,
        rules=parts.tool_calls.approval.rules,
    )
    text = f"/tool {name}{' (error)' if block.is_error else ''}:\n{block.text}"
    app.note(text)
    session = app.agent.session  # kept, and shown again on resume (not a turn: not sent)
    history = app.agent.history
    try:
        session.open()
        output = HostOutput(history[-1].id if history else None, f"/tool {arg.strip()}", text)
        session.record_host_output(replace(output, is_error=block.is_error))
    except SessionError as exc:
        app.note(f"/tool: its output was not saved in the session: {exc}")


def effort_command(app: AppHost, arg: str) -> None:
    """`/effort` (show it), `/effort LEVEL` (set it), `/effort default` (the provider's own).

    Raises:
        ConfigError: from the agent (not expected: the level is checked here).
    """
    agent = app.agent
    if not arg:
        now = user_controls.effort_of(agent)
        app.note(f"effort: {now or 'default'} ({'|'.join(EFFORTS)}|default)")
        return
    level = None if arg.strip().lower() == "default" else parse_effort(arg)
    if level is None and arg.strip().lower() != "default":
        app.note(f"usage: /effort {'|'.join(EFFORTS)}|default")
        return
    _set_effort(app, level)


def cycle_effort(app: AppHost) -> None:
    """The effort key: the next level (default → low → medium → high → max → default)."""
    if app.opened is None:
        return
    _set_effort(app, next_effort(user_controls.effort_of(app.agent)))
    app.update_status()


def _set_effort(app: AppHost, level: Effort | None) -> None:
    line = user_controls.set_effort(app.agent, level)
    app.note(f"effort: {level or 'default'}" + (f" ({line})" if line else ""))


def _plan(app: AppHost, arg: str) -> None:
    """`/plan` (on), `/plan off`, `/plan GOAL` (on, and GOAL sent as the prompt)."""
    agent = app.agent
    if arg == "off":
        agent.set_plan_mode(False)
        app.note(f"plan mode off (approval: {agent.approval_mode})")
        return
    agent.set_plan_mode(True)
    app.note("plan mode on: read-only tools; the agent ends with a plan for you to approve")
    if arg and arg != "on":
        if app.busy:
            agent.steer(arg)
            return
        app.transcript.add(UserRow(arg))
        app.start_run(arg)


def _export(app: AppHost, arg: str) -> None:
    """`/export [md|html|jsonl] [FILE]`: the stored session written to FILE (default
    `<session id>.<ext>` in the project folder; a relative FILE is relative to it; without a
    format, the FILE's suffix picks it, else `html`), secrets masked as in tool output
    (`Agent.redact`)."""
    from tether.session.export import EXPORT_FORMATS, export_session

    assert app.opened is not None
    store, writer = app.opened.store, app.opened.writer
    if store is None or writer is None:
        app.note("/export: this session is not stored")
        return
    fmt: str | None = None
    files: list[str] = []
    for word in arg.split():
        if fmt is None and word in EXPORT_FORMATS:
            fmt = word
        else:
            files.append(word)
    if len(files) > 1:
        app.note(f"usage: /export [{'|'.join(EXPORT_FORMATS)}] [FILE]")
        return
    if fmt is None:  # from the file's suffix, else a page
        suffix = Path(files[0]).suffix.lstrip(".") if files else ""
        fmt = {"md": "md", "markdown": "md", "jsonl": "jsonl"}.get(suffix, "html")
    assert fmt in EXPORT_FORMATS
    root = app.agent.root
    target = Path(files[0]).expanduser() if files else Path(f"{writer.id}.{fmt}")
    target = target if target.is_absolute() else root / target
    try:
        text = export_session(store.load(writer.id), fmt, redact=app.agent.redact)
        target.write_text(text, encoding="utf-8")
    except (OSError, SessionError) as exc:
        app.note(f"/export: {exc}")
        return
    app.note(f"exported {writer.id} as {fmt} to {target}")


async def _compact(app: AppHost, focus: str | None) -> None:
    try:
        if not await app.agent.compact_now(focus) and app.agent.compaction is None:
            app.note("nothing to compact: compaction is off (--no-compact)")
    except RunError as exc:
        app.note(f"compaction failed: {exc}")
    finally:
        app.busy = False
        app.update_status()

"""Running the TUI's slash commands (`/compact`, `/safe`, `/approval`, `/plan`, `/rewind`,
`/model`, `/effort`, `/add-dir`, `/new`, `/sessions`, `/fork`, `/usage`, `/context`, `/timeline`,
`/settings`, `/memory`, `/init`, `/tasks`, `/help`, `/quit`, `!cmd`, and the session's own `/name`
commands) against the app's agent (`!cmd` and `/tasks`: `tether.tui.shell_commands`).

Owns: `run_command`, the session switch (`switch`: close this session, open another or a
new one) and `CommandHost`, what they need of the app (`tether.tui.app.TetherApp` satisfies
it). The screens are `tether.tui.panels` (`/context`, `/timeline`) and
`tether.tui.settings_screen`.
Does not own: parsing and the command list (`tether.tui.commands`), the app.
"""

from __future__ import annotations

from collections.abc import Coroutine
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from tether.agent import user_controls
from tether.agent.approval import APPROVAL_MODES
from tether.effort import EFFORTS, Effort, next_effort, parse_effort
from tether.errors import ConfigError, RunError, SessionError
from tether.providers.pricing import turns_usage_line
from tether.tui.commands import COMMANDS, KEYS
from tether.tui.context_view import cache_line
from tether.tui.panels import ContextScreen, TimelineScreen, context_rows_of
from tether.tui.shell_commands import run_bang, tasks
from tether.tui.user_commands import INIT_PROMPT, context_lines, memory, run_user_command
from tether.tui.widgets import UserRow

if TYPE_CHECKING:
    from contextlib import AbstractContextManager

    from textual.geometry import Size
    from textual.screen import Screen
    from textual.worker import Worker

    from tether.agent.agent import Agent
    from tether.skills.commands import Command
    from tether.tui.feed import Feed
    from tether.tui.opening import Opened
    from tether.tui.transcript import Transcript


class CommandHost(Protocol):
    """The app as the commands see it.

    Attributes:
        opened: the open session (agent, writer, store), or None before one is open.
        busy: the agent (or a compaction) is working; a command that needs it idle refuses.
        worker: the worker running the agent or a compaction, if any.
        feed: the events → rows logic (cleared on a session switch).
    """

    opened: Opened | None
    busy: bool
    worker: Worker[None] | None
    feed: Feed

    @property
    def agent(self) -> Agent:
        """The open session's agent (only when `opened` is set)."""
        ...

    @property
    def transcript(self) -> Transcript:
        """The transcript widget."""
        ...

    @property
    def size(self) -> Size:
        """The terminal's size, in cells."""
        ...

    def note(self, text: str) -> None:
        """Show a line from tether in the transcript."""
        ...

    def update_status(self) -> None:
        """Refresh the footer."""
        ...

    def run_worker(self, work: Coroutine[Any, Any, None], *, group: str) -> Worker[None]:
        """Run `work` as a worker of the app, in `group`."""
        ...

    def push_screen(self, screen: Screen[Any]) -> object:
        """Show `screen` over the app."""
        ...

    def action_settings(self) -> None:
        """Open the settings screen."""
        ...

    async def action_quit(self) -> None:
        """Quit the app."""
        ...

    async def open_session(self, resume: str | None) -> None:
        """Open session `resume` (None: a new one) and show its history."""
        ...

    def start_run(self, prompt: str | None, *, command: Command | None = None) -> None:
        """Run the agent on `prompt` (for a `/name` command: with its model and tools)."""
        ...

    def suspend(self) -> AbstractContextManager[None]:
        """Hand the terminal to another program (the editor) for the `with` block."""
        ...

    def open_rewind(self) -> None:
        """Show the rewind picker (`tether.tui.safety`)."""
        ...


async def run_command(app: CommandHost, name: str, arg: str) -> None:
    """Run `/name arg` in `app`; the outcome is a note in the transcript."""
    if name in ("quit", "exit", "q"):
        await app.action_quit()
        return
    if name == "help":
        lines = [f"{c:<10} {h}" for c, h in COMMANDS] + [""] + [f"{k:<22} {a}" for k, a in KEYS]
        app.note("\n".join(lines))
        return
    if app.opened is None:
        app.note("no agent")
        return
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
        elif name == "model":
            if not arg:
                app.note(f"model: {agent.provider.name}/{agent.provider.model}")
                return
            agent.switch_model(arg)
            app.note(f"model: {agent.provider.name}/{agent.provider.model}")
        elif name == "effort":
            effort_command(app, arg)
        elif name == "add-dir":
            if not arg:
                shown = ", ".join(agent.parts.config.tools.add_dirs) or "none"
                app.note(f"extra folders: {shown} (usage: /add-dir PATH[:ro])")
                return
            app.note(f"added {user_controls.add_dir(agent, arg)}: the tools may use it too")
        elif name == "new":
            if app.busy:
                app.note("/new: wait until the agent is idle (or Esc)")
                return
            await switch(app, None)
            app.note("new session")
        elif name == "plan":
            _plan(app, arg)
        elif name == "rewind":
            if app.busy:
                app.note("/rewind: wait until the agent is idle (or Esc)")
                return
            app.open_rewind()
        elif name in ("sessions", "fork"):
            await _session_command(app, name, arg)
        elif name == "usage":
            history = agent.history
            app.note(f"usage: {turns_usage_line(history)}")
        elif name == "context":
            limits = agent.limits
            app.push_screen(
                ContextScreen(
                    context_rows_of(agent),
                    limits.context_window,
                    [*context_lines(agent), cache_line(agent.history)],
                    guessed=limits.source == "default",
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
        elif name == "tasks":
            await tasks(app, arg)
        elif name in app.opened.commands:
            if not app.busy:
                app.transcript.add(UserRow(f"/{name} {arg}".rstrip()))
            run_user_command(app, app.opened.commands[name], arg)
        elif name == "export":
            _export(app, arg)
        else:
            app.note(f"unknown command /{name}: /help lists them")
    except ConfigError as exc:
        app.note(f"/{name}: {exc}")
    app.update_status()


def effort_command(app: CommandHost, arg: str) -> None:
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


def cycle_effort(app: CommandHost) -> None:
    """The effort key: the next level (default → low → medium → high → max → default)."""
    if app.opened is None:
        return
    _set_effort(app, next_effort(user_controls.effort_of(app.agent)))
    app.update_status()


def _set_effort(app: CommandHost, level: Effort | None) -> None:
    line = user_controls.set_effort(app.agent, level)
    app.note(f"effort: {level or 'default'}" + (f" ({line})" if line else ""))


async def switch(app: CommandHost, resume: str | None) -> None:
    """Close the current session and open `resume` (None: a new one)."""
    assert app.opened is not None
    await app.opened.aclose()
    await app.transcript.clear()
    app.feed.clear()
    await app.open_session(resume)


async def _session_command(app: CommandHost, name: str, arg: str) -> None:
    """`/sessions [id]` and `/fork`."""
    assert app.opened is not None
    store = app.opened.store
    if store is None:
        app.note(f"/{name}: this session is not stored")
        return
    if app.busy:
        app.note(f"/{name}: wait until the agent is idle (or Esc)")
        return
    if name == "sessions" and not arg:
        lines = [f"{i.id}  {i.turn_count:>5} turns  {(i.preview or '')[:60]}" for i in store.list()]
        app.note("\n".join(["sessions (newest first; /sessions ID resumes):", *lines[:30]]))
        return
    if name == "sessions":
        if not store.exists(arg):
            app.note(f"/sessions: no session {arg!r}")
            return
        await switch(app, arg)
        app.note(f"resumed {arg}")
        return
    writer, history = app.opened.writer, app.agent.history
    if writer is None or not history:
        app.note("/fork: nothing to fork yet")
        return
    fork = store.create(None, cwd=str(app.agent.root), parent=(writer.id, history[-1].id))
    fork.close()
    parent = writer.id
    await switch(app, fork.id)
    app.note(f"forked {parent} → {fork.id}")


def _plan(app: CommandHost, arg: str) -> None:
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


def _export(app: CommandHost, arg: str) -> None:
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


async def _compact(app: CommandHost, focus: str | None) -> None:
    try:
        if not await app.agent.compact_now(focus):
            app.note("nothing to compact")
    except RunError as exc:
        app.note(f"compaction failed: {exc}")
    finally:
        app.busy = False
        app.update_status()

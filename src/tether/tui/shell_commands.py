"""The TUI's shell commands: `!cmd` (run a command in the sandbox; it and its output go with the
next message) and `/tasks` (the background shells: list them, stop one).

Owns: `run_bang` (while the agent works the command is queued, shown as queued, and run once
it is idle: `run_queued_bangs`; Esc drops the queue), `tasks`. The context text a `!cmd` adds
(Claude Code's `<bash-input>` / `<bash-stdout>` shape) and its reading back are
`tether.tui.bang` (re-exported here).
Does not own: running the command (`tether.tools.builtin.bash.run_shell`: the same sandbox
and limits as the `bash` tool), the background shells (`tether.tools.exec.background`),
dispatching commands (`tether.tui.handlers`).
"""

from __future__ import annotations

import asyncio
import subprocess
from typing import TYPE_CHECKING, Any, Protocol

from tether.messages import TextBlock, Turn
from tether.tools.builtin.bash import run_shell
from tether.tui.bang import (
    BANG_LEAD,
    SHOWN_CHARS,
    bang_context,
    hold_output,
    parse_bang,
    shown_output,
)
from tether.tui.widgets import UserRow

if TYPE_CHECKING:
    from collections.abc import Coroutine

    from textual.worker import Worker

    from tether.agent.agent import Agent
    from tether.tui.transcript import Transcript

__all__ = [
    "BANG_LEAD",
    "SHOWN_CHARS",
    "ShellHost",
    "bang_context",
    "parse_bang",
    "run_bang",
    "shown_output",
    "tasks",
]


class ShellHost(Protocol):
    """What these commands need of the app (`tether.tui.handlers.CommandHost` has it)."""

    busy: bool
    worker: Worker[None] | None
    queued_bangs: list[tuple[str, UserRow]]
    """The `!cmd`s typed while the agent worked, with their rows: run once it is idle."""

    @property
    def agent(self) -> Agent: ...
    @property
    def transcript(self) -> Transcript: ...
    def note(self, text: str) -> None: ...
    def update_status(self) -> None: ...
    def run_worker(self, work: Coroutine[Any, Any, None], *, group: str) -> Worker[None]: ...

BANG_TIMEOUT_S = 120.0
"""The time limit of a `!cmd` (s); Esc stops it sooner."""


def run_bang(app: ShellHost, command: str) -> None:
    """`!command`: run it in the sandbox (a worker: Esc stops it), show its output, and store
    the command and its output in the session as a user message, sent with the next
    prompt (no model turn)."""
    if not command:
        app.note("usage: !command  (runs it in the sandbox; its output goes with your next message)")
        return
    if app.agent.tool_context.sandbox is None:
        app.note("!: no OS sandbox here (safe mode), so tether runs no commands; use your terminal")
        return
    if app.busy:  # queued: run once the agent is idle (`run_queued_bangs`)
        row = UserRow(f"!{command}", queued=True)
        app.queued_bangs.append((command, row))
        app.transcript.add(row)
        return
    app.transcript.add(UserRow(f"!{command}"))
    _start(app, command)


def _start(app: ShellHost, command: str) -> None:
    app.busy = True
    app.update_status()
    app.worker = app.run_worker(_bang(app, command), group="agent")


def run_queued_bangs(app: ShellHost, *, cancelled: bool = False) -> None:
    """The agent went idle: the first `!cmd` queued meanwhile runs now (the next one when it
    ends); `cancelled` (Esc): they are dropped, one note says which."""
    if cancelled and app.queued_bangs:
        dropped = ", ".join(f"!{c}" for c, _row in app.queued_bangs)
        for _command, row in app.queued_bangs:
            row.remove()
        app.queued_bangs.clear()
        app.note(f"not run (cancelled): {dropped}")
        return
    if app.busy or not app.queued_bangs:
        return
    command, row = app.queued_bangs.pop(0)
    row.sent()
    _start(app, command)


async def _bang(app: ShellHost, command: str) -> None:
    agent = app.agent
    try:
        out = await run_shell(command, agent.tool_context, BANG_TIMEOUT_S)
        assert isinstance(out.content, str)
        text = agent.redact(out.content)
        app.note(shown_output(text))
        turn_id = agent.parts.new_id()
        held = await hold_output(
            text,
            f"bang-{turn_id}",
            agent.tool_context.session_dir,
            agent.config.tools.output_threshold_chars,
        )
        body = bang_context(command, held, agent.config.tools.output_threshold_chars)
        agent.append(Turn(id=turn_id, role="user", content=(TextBlock(text=body),)))
    except asyncio.CancelledError:
        app.note("!: stopped (nothing was added to the conversation)")
        app.busy = False
        run_queued_bangs(app, cancelled=True)
        raise
    except (OSError, subprocess.SubprocessError) as exc:
        app.note(f"!: the command could not start: {exc}")
    finally:
        app.busy = False
        app.update_status()
    run_queued_bangs(app)


async def tasks(app: ShellHost, arg: str) -> None:
    """`/tasks`: the background shells with their state, age, last lines of output, output
    file and how to stop each (`tether.tui.views.shell_lines`); `/tasks stop ID` stops one
    (`stop` alone: the only one running)."""
    shells = app.agent.tool_context.shells
    if shells is None:
        app.note("/tasks: no background shells in this session")
        return
    verb, _, shell_id = arg.partition(" ")
    if verb in ("stop", "kill"):
        shell_id = shell_id.strip()
        if not shell_id:
            running = shells.running()
            if len(running) != 1:
                app.note("usage: /tasks stop ID  (/tasks lists the ids)")
                return
            shell_id = running[0].id
        shell = shells.get(shell_id)
        if shell is None:
            app.note(f"/tasks: no background shell {shell_id!r}")
            return
        if not shell.running:
            app.note(f"{shell.id} had already ended ({shell.state()})")
            return
        await shells.kill(shell_id)
        app.note(f"stopped {shell.id} ({shell.state()})")
        return
    if arg:
        app.note("usage: /tasks [stop ID]")
        return
    if not len(shells):
        app.note("no background shells (the agent starts them with bash run_in_background)")
        return
    from tether.tui.views import shell_lines

    app.note("\n".join(shell_lines(shells.all(), app.agent.redact)))

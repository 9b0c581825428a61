"""Running the agent in the app: the run as a worker, steering, cancelling.

Owns: `start_run` (the agent as a worker of the app; a `/name` command's model and tools for
that run) and the run's end (errors as notes, steering left over sent on, the plan approval of a
plan mode run, the `!cmd`s typed meanwhile), `turn_started` (the queued steering rows marked
sent at a turn boundary), `stop_run` (quit: the run cancelled, its partial turn persisted by the
loop, waited for), `cancel_tool` (Ctrl+K).
Does not own: the rows (`tether.tui.feed`), the plan approval screen (`tether.tui.safety`),
the `!cmd`s (`tether.tui.shell_commands`).
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Protocol

from tether.errors import ConfigError, RunError
from tether.tui.host import AppHost
from tether.tui.safety import PlanScreen, plan_done
from tether.tui.shell_commands import run_queued_bangs
from tether.tui.user_commands import CommandRun

if TYPE_CHECKING:
    from tether.messages import ContentBlock
    from tether.skills.commands import Command
    from tether.tui.completion import Completer
    from tether.tui.widgets import UserRow

STOP_WAIT_S = 2.0
"""Longest `stop_run` waits for a cancelled run to end (its partial turn saved)."""


class RunHost(AppHost, Protocol):
    """The app as a run sees it.

    Attributes:
        queued: the steering prompts' rows, shown as queued until a turn boundary takes them.
        plan: a plan mode run's plan, shown for approval once the run ends.
        completer: the `@path` completion, whose paths the run may have changed.
    """

    queued: list[UserRow]
    plan: str | None
    completer: Completer

    def alert(self, body: str) -> None:
        """Notify the desktop when the terminal is not focused."""
        ...


def start_run(
    app: RunHost, prompt: str | list[ContentBlock] | None, command: Command | None = None
) -> None:
    """Run the agent on `prompt` as a worker of `app` (for a `/name` command: with its `model`
    and `allowed-tools` for this run)."""
    app.busy = True
    app.update_status()
    app.worker = app.run_worker(_run(app, prompt, command), group="agent", exit_on_error=False)


async def _run(
    app: RunHost, prompt: str | list[ContentBlock] | None, command: Command | None
) -> None:
    app.feed.forget_errors()
    cancelled = False
    try:
        while True:
            try:
                with CommandRun(app.agent, command):
                    await app.agent.run(prompt)
            except RunError as exc:
                if not app.feed.error_shown(exc.kind, exc.message):  # its event said it
                    app.note(f"error: {exc}")
                break
            except (ConfigError, OSError) as exc:  # e.g. a model that cannot take the tools
                app.note(f"error: {exc}")
                break
            except asyncio.CancelledError:
                app.note("cancelled (the partial turn is saved)")
                cancelled = True
                raise
            left = app.agent.take_steering()
            if not left:
                break
            _sent(app)
            prompt = "\n\n".join(left)
    finally:
        app.feed.end_blocks()
        app.completer.forget()  # the run may have written files
        app.busy = False
        app.update_status()
        app.alert("the run ended")
        plan, app.plan = app.plan, None
        if plan is not None and app.agent.plan_mode:
            app.push_screen(PlanScreen(plan), callback=lambda mode: plan_done(app, mode))
        run_queued_bangs(app, cancelled=cancelled)  # the `!cmd`s typed meanwhile


def _sent(app: RunHost) -> None:
    for row in app.queued:
        row.sent()
        app.transcript.to_end(row)  # where the agent took it, not where it was typed
    app.queued.clear()


def turn_started(app: RunHost) -> None:
    """A turn boundary: the queued steering rows are sent once the agent took them all."""
    if not app.agent.pending_steering:
        _sent(app)
    app.update_status()


async def stop_run(app: AppHost) -> None:
    """Cancel a running request (the loop persists its partial turn) and wait for it to end,
    `STOP_WAIT_S` at most."""
    if app.worker is None or not app.busy:
        return
    app.worker.cancel()
    deadline = asyncio.get_running_loop().time() + STOP_WAIT_S
    while app.busy and asyncio.get_running_loop().time() < deadline:
        await asyncio.sleep(0.01)


def cancel_tool(app: AppHost) -> None:
    """Ctrl+K: cancel the newest tool call still running."""
    for call_id in reversed(list(app.feed.tool_rows)):
        if app.agent.cancel_tool(call_id):
            app.note(f"cancelled tool call {call_id}")
            return
    app.note("no tool call is running")

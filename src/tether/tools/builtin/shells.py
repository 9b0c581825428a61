"""The background-shell tools: `shell_output` (what a background shell wrote since the last
read, and its state; with no id, every shell listed) and `shell_kill` (stop one).

Owns: the two tools (Claude Code's `BashOutput` / `KillShell`). Both are `safe`: they change
no file (they only read or stop what `bash` started with `run_in_background`).
Does not own: starting a shell (`tether.tools.builtin.bash`), the shells themselves
(`tether.tools.exec.background`).
"""

from __future__ import annotations

import re

from tether.tools.base import tool
from tether.tools.context import ToolContext, ToolOutput
from tether.tools.exec.background import BackgroundShells

SHELL_OUTPUT_TOOL = "shell_output"
SHELL_KILL_TOOL = "shell_kill"


def _listing(shells: BackgroundShells) -> str:
    if not len(shells):
        return "no background shells (start one with bash and run_in_background: true)"
    lines = [f"{s.id}: {s.state()}, {s.unread} bytes unread — {s.command}" for s in shells.all()]
    return "background shells:\n" + "\n".join(lines)


def _unknown(shells: BackgroundShells, shell_id: str) -> ToolOutput:
    ids = ", ".join(s.id for s in shells.all()) or "none"
    return ToolOutput(f"no background shell {shell_id!r} (the shells: {ids})", is_error=True)


@tool(name=SHELL_OUTPUT_TOOL, safe=True)
async def shell_output(
    shell_id: str | None = None, filter: str | None = None, *, ctx: ToolContext
) -> ToolOutput:
    """A background shell's output since your last read of it, and its state (running or
    exit code). Without shell_id: every background shell listed, nothing read.

    Args:
        shell_id: the id bash returned, e.g. bash_1.
        filter: a regex: show only the new lines matching it.
    """
    shells = ctx.shells
    if shells is None:
        return ToolOutput("no background shells here", is_error=True)
    if shell_id is None:
        return ToolOutput(_listing(shells))
    shell = shells.get(shell_id)
    if shell is None:
        return _unknown(shells, shell_id)
    try:
        pattern = re.compile(filter) if filter else None
    except re.error as e:
        return ToolOutput(f"filter is not a valid regular expression: {e}", is_error=True)
    ended = not shell.running  # the state below tells the model how it ended
    text = shell.take(pattern).rstrip("\n")
    state = shell.state()
    shell.told = shell.told or ended
    body = text if text.strip() else "(no new output)"
    return ToolOutput(f"{body}\n({shell.id}: {state})")


@tool(name=SHELL_KILL_TOOL, safe=True)
async def shell_kill(shell_id: str, *, ctx: ToolContext) -> ToolOutput:
    """Stop a background shell and every process it started.

    Args:
        shell_id: the id bash returned.
    """
    shells = ctx.shells
    if shells is None:
        return ToolOutput("no background shells here", is_error=True)
    shell = shells.get(shell_id)
    if shell is None:
        return _unknown(shells, shell_id)
    was_running = shell.running
    await shells.kill(shell_id, told=True)
    if not was_running:
        return ToolOutput(f"{shell.id} had already ended ({shell.state()})")
    return ToolOutput(f"{shell.id} stopped ({shell.state()}); {shell.unread} bytes unread")

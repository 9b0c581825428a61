"""Background shells' ends told to the model, as a turn policy: a shell that ended since the
last request (its command finished, or the user stopped it with `/tasks stop`) is named in a
system note before the next request, with how it ended and how much of its output is unread,
so the model need not poll `shell_output` to learn that a build finished or a server died.

Owns: `ShellNotices`, `ended_note`.
Does not own: the shells (`tether.tools.exec.background`: which ends are due, `Shell.told`),
the tools (`tether.tools.builtin.shells`), how a note is stored (`system_note_block`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from tether.agent.turn.policy import TurnPolicy
from tether.messages import ContentBlock, RunStopReason, Turn
from tether.plural import counted
from tether.tools.exec.background import Shell
from tether.tools.exec.run import system_note_block

if TYPE_CHECKING:
    from tether.agent.turn.state import RunParts, RunState

__all__ = ["ShellNotices", "ended_note"]

COMMAND_CHARS = 80
"""A command longer than this is shown cut in a note."""


def ended_note(shells: list[Shell]) -> str:
    """The note naming each ended shell: how it ended, its command, its unread output."""
    lines: list[str] = []
    for shell in shells:
        command = shell.command if len(shell.command) <= COMMAND_CHARS else (
            shell.command[: COMMAND_CHARS - 1] + "…"
        )
        how = "was stopped by the user" if shell.killed else f"ended ({shell.state()})"
        unread = shell.unread
        tail = (
            f"; {counted(unread, 'byte')} of its output unread (shell_output {shell.id} reads them)"
            if unread
            else ""
        )
        lines.append(f"Background shell {shell.id} ({command}) {how}{tail}.")
    return "\n".join(lines)


class ShellNotices(TurnPolicy):
    """Tells the model which background shells ended (module docstring): after the user's
    prompt when a run starts, else in a user turn of its own before the next request (the
    wire joins it to the results before it). Nothing is added when no shell ended unknown to
    the model (the shells it stopped or read to the end are known)."""

    def on_prompt(
        self, content: tuple[ContentBlock, ...], parts: RunParts, state: RunState
    ) -> tuple[ContentBlock, ...]:
        """The prompt with the note after it, when a shell ended since the last request."""
        shells = parts.tool_context.shells
        if not content or shells is None or not (ended := shells.take_ended()):
            return content
        return (*content, system_note_block(ended_note(ended)))

    async def before_request(self, parts: RunParts, state: RunState) -> RunStopReason | None:
        """Appends the note as a user turn when a shell ended since the last request; never
        stops the run."""
        shells = parts.tool_context.shells
        if shells is not None and (ended := shells.take_ended()):
            note = system_note_block(ended_note(ended))
            state.append(Turn(id=parts.new_id(), role="user", content=(note,)))
        return None

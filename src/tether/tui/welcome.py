"""The opening panel of a new session: where you are and what was loaded, with three tips;
gone once the first message is sent (a resumed session opens on its transcript instead).

Owns: `welcome_lines` (the folder, the git branch, the model and the approval mode, the
instruction files and skills the system prompt was built with, the tips: from the session's
facts, `tether.prompt.facts`) and `Welcome` (the panel).
Does not own: gathering the facts (`tether.prompt.gather`), the app.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.text import Text
from textual.widgets import Static

from tether.prompt.system import skills_listing

if TYPE_CHECKING:
    from tether.agent.agent import Agent

__all__ = ["TIPS", "Welcome", "welcome_lines"]

TIPS = (
    "/help lists the commands and keys",
    "@path sends a file (or a folder's listing) with your message; Tab completes it",
    "Shift+Tab cycles ask → auto-edit → plan; Esc Esc rewinds",
)
"""The three tips of the opening panel."""


def welcome_lines(agent: Agent) -> list[str]:
    """What the opening panel says about `agent`'s session."""
    context = agent.session.context
    mode = "plan" if agent.plan_mode else agent.approval_mode
    lines = [f"folder    {agent.root}"]
    if context is not None:
        git = context.environment.git
        if git is not None:
            branch = git.branch or "detached HEAD"
            lines.append(f"git       {branch}{' (uncommitted changes)' if git.dirty else ''}")
        else:
            lines.append(f"git       {context.environment.git_note}")
    lines.append(f"model     {agent.provider.name}/{agent.provider.model}")
    lines.append(f"approval  {mode}{' · safe mode' if agent.safe_mode else ''}")
    if context is not None:
        files = ", ".join(f.name for f in context.instructions)
        lines.append(f"loaded    {files or 'no instruction files (/init writes an AGENTS.md)'}")
        listed, left = skills_listing(context.skills, context.skills_budget_chars)
        names = ", ".join(s.name for s in listed)
        if names:
            lines.append(f"skills    {names}" + (f" (+{left} more)" if left else ""))
    return [*lines, "", *(f"· {tip}" for tip in TIPS)]


class Welcome(Static):
    """The opening panel (removed when the first message is sent)."""

    DEFAULT_CSS = """
    Welcome { border: round $accent; padding: 0 1; margin: 1 0; height: auto; }
    """

    def __init__(self, agent: Agent) -> None:
        body = Text("tether", style="bold")
        body.append("\n" + "\n".join(welcome_lines(agent)))
        super().__init__(body)

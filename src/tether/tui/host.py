"""The app as the TUI's parts see it: `AppHost`, what the commands (`tether.tui.handlers`), the
safety net (`tether.tui.safety`) and the pickers need of `tether.tui.app.TetherApp` (which
satisfies it). A protocol, so that those modules never import the app.
"""

from __future__ import annotations

from collections.abc import Callable, Coroutine
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from contextlib import AbstractContextManager

    from textual.geometry import Size
    from textual.screen import Screen
    from textual.worker import Worker

    from tether.agent.agent import Agent
    from tether.messages import ContentBlock
    from tether.skills.commands import Command
    from tether.tui.feed import Feed
    from tether.tui.opening import Opened
    from tether.tui.transcript import Transcript
    from tether.tui.widgets import PromptInput, UserRow


class AppHost(Protocol):
    """The app as its parts see it.

    Attributes:
        opened: the open session (agent, writer, store), or None before one is open.
        busy: the agent (or a compaction) is working; a command that needs it idle refuses.
        worker: the worker running the agent or a compaction, if any.
        feed: the events → rows logic (cleared on a session switch).
        queued_bangs: the `!cmd`s typed while the agent worked, run once it is idle.
    """

    opened: Opened | None
    busy: bool
    worker: Worker[None] | None
    feed: Feed
    queued_bangs: list[tuple[str, UserRow]]

    def copy_answer(self, arg: str = "") -> None:
        """`/copy [N|pick]` (`tether.tui.clipboard`)."""
        ...

    def pick_theme(self, arg: str) -> None:
        """`/theme [name]` (`tether.tui.appearance`)."""
        ...

    @property
    def agent(self) -> Agent:
        """The open session's agent (only when `opened` is set)."""
        ...

    @property
    def prompt_input(self) -> PromptInput:
        """The prompt editor."""
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

    def run_worker(
        self, work: Coroutine[Any, Any, None], *, group: str, exit_on_error: bool = True
    ) -> Worker[None]:
        """Run `work` as a worker of the app, in `group` (`exit_on_error`: its failure ends
        the app)."""
        ...

    def push_screen(
        self, screen: Screen[Any], callback: Callable[[Any], None] | None = None
    ) -> object:
        """Show `screen` over the app (`callback` gets what it dismisses with)."""
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

    def start_run(
        self, prompt: str | list[ContentBlock] | None, *, command: Command | None = None
    ) -> None:
        """Run the agent on `prompt` (for a `/name` command: with its model and tools)."""
        ...

    def suspend(self) -> AbstractContextManager[None]:
        """Hand the terminal to another program (the editor) for the `with` block."""
        ...

    def set_prompt(self, text: str, *, keep_typed: bool = False) -> None:
        """Put `text` in the prompt editor (`keep_typed`: not over something typed)."""
        ...

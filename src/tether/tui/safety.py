"""The TUI's side of the safety net: `/rewind` (and Esc Esc) with a picker showing what each
point would change, `/plan` and the plan approval, Shift+Tab through the modes, the todo panel.

Owns: `TodoPanel` (the todo list's latest state above the prompt: from `todo` events, and from
the history when a session opens), `PlanScreen` (approve the plan and pick the approval mode to
carry it out in, or keep planning), `RewindScreen` (the user turns, newest first; the
highlighted one's changes from the folder as it is now; Enter rewinds files and conversation,
`f` the files only, `c` the conversation only), `next_mode` / `cycle_mode` (the Shift+Tab
cycle), `open_rewind` (the picker and the rewind it picks) and `plan_done` (a plan approved).
Does not own: the rewind rules (`tether.checkpoint.rewind`), the app (`tether.tui.app`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import OptionList, Static
from textual.widgets.option_list import Option

from tether.agent.turn.checkpoints import checkpoint_store, synthetic_user_turn
from tether.checkpoint.rewind import RewindPlan, plan_rewind, preview, rewind
from tether.checkpoint.timeline import UserTurn, user_turns
from tether.errors import CheckpointError, ConfigError, TetherError
from tether.tools.builtin.todo import render
from tether.tui.host import AppHost
from tether.tui.rows import typed_text
from tether.tui.widgets import UserRow

if TYPE_CHECKING:
    from tether.agent.agent import Agent
    from tether.messages import Turn
    from tether.session import LoadedSession, SessionStore

MODES = ("ask", "auto-edit", "plan")
"""What Shift+Tab cycles through (`auto` and `read-only` are set with `/approval`)."""
PLAN_APPROVED = "The plan is approved: carry it out now."


def current_mode(agent: Agent) -> str:
    """`plan` in plan mode, else the approval mode."""
    return "plan" if agent.plan_mode else agent.approval_mode


def next_mode(agent: Agent) -> str:
    """Switch `agent` to the mode after its current one (Shift+Tab) and return it."""
    now = current_mode(agent)
    mode = MODES[(MODES.index(now) + 1) % len(MODES)] if now in MODES else MODES[0]
    if mode == "plan":
        agent.set_plan_mode(True)
    else:
        agent.set_plan_mode(False)
        agent.set_approval_mode(mode)  # pyright: ignore[reportArgumentType]
    return mode


class TodoPanel(Static):
    """The todo list's latest state (hidden while there is none)."""

    DEFAULT_CSS = """
    TodoPanel { height: auto; max-height: 10; border: round $accent; padding: 0 1;
        display: none; }
    TodoPanel.shown { display: block; }
    """

    def show_items(self, items: Sequence[dict[str, str]] | None) -> None:
        """Show `items` (None or empty: hide the panel)."""
        self.set_class(bool(items), "shown")
        done = sum(1 for i in items or () if i.get("status") == "done")
        title = f"todo {done}/{len(items or ())}\n"
        self.update(Text(title + render(items or ()), no_wrap=False))


class PlanScreen(ModalScreen[str | None]):
    """The plan: `1` carry it out asking before edits (`ask`), `2` editing freely
    (`auto-edit`), `3` with nothing asked (`auto`); `k` / Esc keep planning."""

    DEFAULT_CSS = """
    PlanScreen { align: center middle; }
    PlanScreen > Vertical { width: 90%; height: auto; max-height: 90%;
        border: thick $success; background: $surface; padding: 0 1; }
    """
    BINDINGS = [  # noqa: RUF012 - Textual's class-level binding table
        Binding("1", "pick('ask')", "approve, ask"),
        Binding("2", "pick('auto-edit')", "approve, auto-edit"),
        Binding("3", "pick('auto')", "approve, auto"),
        Binding("k", "keep", "keep planning"),
        Binding("escape", "keep", "keep planning"),
    ]

    def __init__(self, plan: str) -> None:
        super().__init__()
        self.plan = plan

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Static(Text("The plan", style="bold"))
            yield Static(Text(self.plan))
            yield Static(
                Text(
                    "approve and carry it out: [1] asking before changes  [2] editing freely "
                    "(auto-edit)  [3] asking nothing (auto)   [k] keep planning"
                )
            )

    def action_pick(self, mode: str) -> None:
        self.dismiss(mode)

    def action_keep(self) -> None:
        self.dismiss(None)


class RewindScreen(ModalScreen["tuple[int, str] | None"]):
    """The user turns to rewind to, newest first, with what each would change now."""

    DEFAULT_CSS = """
    RewindScreen { align: center middle; }
    RewindScreen > Vertical { width: 90%; height: 80%; border: thick $warning;
        background: $surface; padding: 0 1; }
    RewindScreen #turns { height: 1fr; }
    RewindScreen #changes { height: auto; max-height: 12; color: $text-muted; }
    """
    BINDINGS = [  # noqa: RUF012
        Binding("f", "pick('files')", "files only"),
        Binding("c", "pick('conversation')", "conversation only"),
        Binding("escape", "cancel", "cancel"),
    ]

    def __init__(self, loaded: LoadedSession, store: SessionStore) -> None:
        super().__init__()
        self.loaded = loaded
        self.cp = checkpoint_store(store.root)
        self.turns: tuple[UserTurn, ...] = user_turns(loaded.turns, synthetic_user_turn)
        self._shown: dict[int, str] = {}

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Static(Text("Rewind to before which message?", style="bold"))
            options = [
                Option(Text(f"{t.number:>3}  {_first_line(self.loaded.turns[t.index])}"), id=str(t.number))
                for t in reversed(self.turns)
            ]
            yield OptionList(*options, id="turns")
            yield Static("", id="changes")
            yield Static(
                Text("Enter: files and conversation · f: files only · c: conversation only · Esc")
            )

    def on_mount(self) -> None:
        turns = self.query_one("#turns", OptionList)
        turns.focus()
        if self.turns:
            turns.highlighted = 0

    def _number(self) -> int | None:
        turns = self.query_one("#turns", OptionList)
        i = turns.highlighted
        return None if i is None else self.turns[len(self.turns) - 1 - i].number

    def on_option_list_option_highlighted(self, event: OptionList.OptionHighlighted) -> None:
        n = self._number()
        if n is not None:
            self.query_one("#changes", Static).update(Text(self._changes(n)))

    def _changes(self, n: int) -> str:
        if n not in self._shown:
            try:
                plan: RewindPlan = plan_rewind(self.loaded, n, store=self.cp, synthetic=synthetic_user_turn)
                changes, external = preview(plan)
                lines = [f"{c.kind:<8} {c.path}" for c in changes[:10]]
                if len(changes) > 10:
                    lines.append(f"... and {len(changes) - 10} more")
                kept = [c.path for c in changes if c.path in external]
                self._shown[n] = (
                    ("files back to before this message:\n" + "\n".join(lines))
                    if lines
                    else "no file would change"
                ) + (f"\nkept (changed outside tether): {', '.join(kept)}" if kept else "")
            except (TetherError, CheckpointError) as exc:
                self._shown[n] = f"files: {exc}"
        return self._shown[n]

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        self.action_pick("both")

    def action_pick(self, mode: str) -> None:
        n = self._number()
        self.dismiss(None if n is None else (n, mode))

    def action_cancel(self) -> None:
        self.dismiss(None)


def _first_line(turn: Turn) -> str:
    """A picker row's text: the first line of what the user typed (not the `!cmd` context or
    the `@path` files tether added to it)."""
    return (typed_text(turn).strip().splitlines() or [""])[0][:80]


def do_rewind(
    loaded: LoadedSession, store: SessionStore, number: int, mode: str
) -> tuple[str | None, str, str]:
    """Carry out a rewind picked in `RewindScreen`: (the session to open next — the fork, or
    the same one for files only —, the note to show, the prompt to put back in the editor).

    Raises:
        TetherError: the rewind was refused (nothing changed).
    """
    plan = plan_rewind(
        loaded,
        number,
        store=checkpoint_store(store.root),
        files=mode in ("both", "files"),
        conversation=mode in ("both", "conversation"),
        synthetic=synthetic_user_turn,
    )
    done = rewind(plan, store)
    parts: list[str] = []
    if done.report is not None:
        r = done.report
        parts.append(f"files back to before message {number}: {len(r.written)} restored, {len(r.removed)} removed")
        if r.kept:
            parts.append(f"kept (changed outside tether): {', '.join(r.kept)}")
    if done.session_id is not None:
        parts.append(f"conversation forked into {done.session_id} (the original {loaded.header.id} is kept)")
    prompt = ""  # what the user typed, back in the editor (re-sending attaches the files again)
    if done.prompt:
        picked = next((t for t in user_turns(loaded.turns, synthetic_user_turn) if t.number == number), None)
        prompt = typed_text(loaded.turns[picked.index]) if picked is not None else done.prompt
    return done.session_id or loaded.header.id, "; ".join(parts), prompt


def cycle_mode(app: AppHost) -> None:
    """Shift+Tab: ask → auto-edit → plan (a note says which)."""
    if app.opened is None:
        return
    try:
        app.note(f"mode: {next_mode(app.agent)}")
    except ConfigError as exc:
        app.note(f"mode: {exc}")
    app.update_status()


def plan_done(app: AppHost, mode: str | None) -> None:
    """The plan approved in `mode` (carried out now), or kept planning (None)."""
    if mode is None:
        app.note("still planning: say what to change in the plan")
        return
    agent = app.agent
    agent.set_plan_mode(False)
    agent.set_approval_mode(mode)  # pyright: ignore[reportArgumentType]
    app.transcript.add(UserRow(PLAN_APPROVED))
    app.start_run(PLAN_APPROVED)


def open_rewind(app: AppHost) -> None:
    """The rewind picker over this session's messages (`/rewind`, Esc Esc)."""
    opened = app.opened
    if opened is None or opened.store is None or opened.writer is None:
        app.note("/rewind: this session is not stored")
        return
    if app.busy:
        return
    try:
        loaded = opened.store.load(opened.writer.id)
    except TetherError as exc:
        app.note(f"/rewind: {exc}")
        return
    if not loaded.turns:
        app.note("/rewind: nothing to rewind yet")
        return

    def picked(choice: tuple[int, str] | None) -> None:
        if choice is not None:
            app.run_worker(_rewind(app, *choice), group="agent")

    app.push_screen(RewindScreen(loaded, opened.store), callback=picked)


async def _rewind(app: AppHost, number: int, mode: str) -> None:
    """Close this session (a rewind takes its writer lock), rewind, open the result."""
    opened = app.opened
    assert opened is not None and opened.store is not None and opened.writer is not None
    store, sid = opened.store, opened.writer.id
    await opened.aclose()
    prompt = ""
    try:
        next_id, note, prompt = do_rewind(store.load(sid), store, number, mode)
    except TetherError as exc:
        next_id, note = sid, f"/rewind: {exc}"
    await app.transcript.clear()
    app.feed.clear()
    await app.open_session(next_id)
    app.note(note)
    if prompt and mode != "files":  # the message rewound to, back in the editor to resend
        app.set_prompt(prompt)

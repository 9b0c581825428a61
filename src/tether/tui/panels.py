"""The TUI's read-only panels: `/context` (what fills the window, turn by turn, with the bar)
and `/timeline` (tokens per request of this session, with its marks).

Owns: `ContextScreen` (the bar of `tether.tui.commands.context_bar` over the parts, then a
scrollable table: one row per system prompt, tool schemas and turn of the wire view, with its
estimated tokens and share of the window), `context_rows_of(agent)` (the rows for an agent) and
`TimelineScreen` (the chart of `tether.tui.chart` with its legend). Esc or q closes either.
Does not own: the computations (`tether.tui.context_view`, `tether.session.timeline`, pure).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import cast

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import DataTable, Static

from tether.agent.agent import Agent
from tether.compaction.pressure import text_tokens
from tether.messages import Turn
from tether.session.timeline import session_timeline
from tether.tui.chart import chart_text, legend_lines
from tether.tui.commands import context_bar
from tether.tui.context_view import ContextRow, context_parts, context_rows, split_figure


def context_rows_of(agent: Agent) -> tuple[ContextRow, ...]:
    """The `/context` rows of `agent` now: its system prompt, its tool schemas and each turn
    of its current wire view (`Agent.current_view`) as sent (pruned results stubbed)."""
    system = text_tokens(agent.system or "")
    tools = sum(text_tokens(str(t.spec())) for t in agent.registry)
    view = agent.parts.shape(agent.current_view())
    return context_rows(view, system_tokens=system, tools_tokens=tools)


class PanelScreen(ModalScreen[None]):
    DEFAULT_CSS = """
    PanelScreen { align: center middle; }
    PanelScreen > Vertical { width: 96%; height: 92%; border: thick $accent; background: $surface;
        padding: 0 1; }
    PanelScreen .title { text-style: bold; }
    PanelScreen .keys { color: $text-muted; }
    """
    BINDINGS = [  # noqa: RUF012 - Textual's class-level binding table
        Binding("escape", "close", "close"),
        Binding("q", "close", "close", show=False),
    ]

    def action_close(self) -> None:
        self.dismiss(None)


class ContextScreen(PanelScreen):
    """What fills the context window: the bar, then one row per part of the request."""

    DEFAULT_CSS = """
    ContextScreen #turns { height: 1fr; }
    """

    def __init__(
        self,
        rows: tuple[ContextRow, ...],
        window: int,
        sources: Sequence[str] = (),
        *,
        guessed: bool = False,
        figure: tuple[int, int, bool] | None = None,
    ) -> None:
        super().__init__()
        self.rows = rows if figure is None else split_figure(rows, figure[0])
        self.full_window = max(window, 1)
        self.figure = figure
        """`tether.tui.status.context_figure`: the footer's figure (tokens, effective window,
        approximate); the headline shows it, and shares are of its effective window."""
        self.window = max(figure[1], 1) if figure is not None else self.full_window
        self.sources = tuple(sources)
        self.guessed = guessed
        """The window is a fallback guess (a model tether does not know): shown with `~`."""

    def compose(self) -> ComposeResult:
        total = sum(r.tokens for r in self.rows)
        turns = sum(1 for r in self.rows if r.index is not None)
        guess = "; the window is a guess: set context.windows" if self.guessed else ""
        msgs = f"{turns} message{'' if turns == 1 else 's'}"
        if self.figure is None:
            head = (
                f"context: ~{total} tokens of {'~' if self.guessed else ''}{self.window} "
                f"({total / self.window:.0%}), {msgs} in the wire view (estimated{guess})"
            )
        else:
            tokens, eff, approx = self.figure
            reserve = self.full_window - eff
            head = (
                f"context: {'~' if approx else ''}{tokens:,} tokens, "
                f"{'~' if approx else ''}{tokens / eff:.0%} of the {eff:,}-token effective window "
                f"(the footer's ctx figure; the window is {self.full_window:,} tokens, "
                f"{reserve:,} of them kept for the reply; compaction and the runaway guard "
                f"measure against it){guess}\n"
                f"{msgs} in the wire view; the rows below split that figure by tether's estimate "
                f"of each"
            )
        with Vertical():
            yield Static(Text(head), classes="title")
            if self.sources:
                yield Static(Text("\n".join(self.sources)), id="sources")
            yield Static(Text("\n".join(context_bar(context_parts(self.rows), self.window))))
            yield DataTable(id="turns", cursor_type="row", zebra_stripes=True)
            yield Static(Text("↑↓ PgUp PgDn scroll · Esc close"), classes="keys")

    def on_mount(self) -> None:
        table = cast(DataTable[str | Text], self.query_one(DataTable))
        table.add_columns("#", "kind", "tokens", "share", "what")
        for row in self.rows:
            index = "" if row.index is None else str(row.index + 1)
            share = f"{row.tokens / self.window:.1%}"
            # the label as plain text: a string cell is read as markup, and `[...]` in it (the
            # added-by-tether label, a prompt's own brackets) vanished as a style tag
            table.add_row(index, row.kind, str(row.tokens), share, Text(row.label))
        table.focus()


class TimelineScreen(PanelScreen):
    """Tokens per request of a session, with compactions, persisted outputs and model
    switches marked (as `tether sessions timeline`)."""

    def __init__(self, turns: tuple[Turn, ...] | list[Turn], *, width: int, height: int) -> None:
        super().__init__()
        self.timeline = session_timeline(turns)
        self.chart_width = max(width, 40)
        self.chart_height = max(height, 8)

    def compose(self) -> ComposeResult:
        chart = chart_text(self.timeline, width=self.chart_width, height=self.chart_height)
        with Vertical():
            with VerticalScroll():
                yield Static(Text.from_ansi(chart), id="chart")
                yield Static(Text("\n".join(legend_lines(self.timeline))), id="legend")
            yield Static(Text("Esc close"), classes="keys")

"""The TUI's pickers: a list with type-to-filter, for `/resume` (this folder's sessions first,
searchable by name, first prompt and date) and `/model` (the configured providers, the catalog
and the providers' cached listings, the local models).

Owns: `PickerScreen` (a filter field over a list: typing filters, Up / Down move, Enter picks,
Esc closes; dismissed with the picked choice's key), `matches` (the filter: every typed word
in the choice's text, case ignored), `session_choices` and `model_choices` (the lists).
Does not own: what is done with the pick (`tether.tui.handlers`), listing sessions
(`tether.session`) or models (`tether.providers.models`: nothing is fetched here, only the
cached listings are read).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Input, OptionList, Static
from textual.widgets.option_list import Option

from tether.plural import counted
from tether.session.model import SessionInfo
from tether.settings.model import AgentConfig

__all__ = ["Choice", "PickerScreen", "matches", "model_choices", "session_choices"]


@dataclass(frozen=True, slots=True)
class Choice:
    """One row of a picker: `key` is what picking it returns, `label` what is shown (and
    searched, with `extra`)."""

    key: str
    label: str
    extra: str = ""


def matches(query: str, choice: Choice) -> bool:
    """Whether every word of `query` is in `choice`'s label or extra text (case ignored)."""
    text = f"{choice.label} {choice.extra}".lower()
    return all(word in text for word in query.lower().split())


_KEYS = "Enter: pick · Up / Down: move · Esc: close"


class PickerScreen(ModalScreen[str | None]):
    """Pick one of `choices` (typing filters them); dismissed with its key, or None (Esc)."""

    DEFAULT_CSS = """
    PickerScreen { align: center middle; }
    PickerScreen > Vertical { width: 90%; height: 80%; border: thick $accent;
        background: $surface; padding: 0 1; }
    PickerScreen #choices { height: 1fr; }
    """
    BINDINGS = [  # noqa: RUF012 - Textual's class-level binding table
        Binding("escape", "cancel", "cancel"),
        Binding("down", "move(1)", "next", show=False, priority=True),
        Binding("up", "move(-1)", "previous", show=False, priority=True),
        Binding("pagedown", "move(10)", "next page", show=False, priority=True),
        Binding("pageup", "move(-10)", "previous page", show=False, priority=True),
    ]

    def __init__(
        self, title: str, choices: Sequence[Choice], *, no_match: str = "nothing matches"
    ) -> None:
        super().__init__()
        self.title_text = title
        self.choices = tuple(choices)
        self.shown: list[Choice] = list(self.choices)
        self.no_match = no_match  # said when Enter finds no choice

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Static(Text(self.title_text, style="bold"))
            yield Input(placeholder="type to filter", id="filter")
            yield OptionList(*self._options(), id="choices")
            yield Static(Text(_KEYS, style="dim"), id="hint")

    def _options(self) -> list[Option]:
        return [Option(Text(c.label), id=str(i)) for i, c in enumerate(self.shown)]

    def on_mount(self) -> None:
        self.query_one("#filter", Input).focus()
        self._highlight_first()

    def _highlight_first(self) -> None:
        choices = self.query_one("#choices", OptionList)
        choices.highlighted = 0 if self.shown else None

    def on_input_changed(self, event: Input.Changed) -> None:
        self.shown = [c for c in self.choices if matches(event.value, c)]
        choices = self.query_one("#choices", OptionList)
        choices.clear_options()
        choices.add_options(self._options())
        self._highlight_first()

    def action_move(self, by: int) -> None:
        choices = self.query_one("#choices", OptionList)
        if not self.shown:
            return
        now = choices.highlighted or 0
        choices.highlighted = max(0, min(len(self.shown) - 1, now + by))

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        self._pick(self.query_one("#choices", OptionList).highlighted)

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        self._pick(event.option_index)

    def _pick(self, index: int | None) -> None:
        if index is not None and 0 <= index < len(self.shown):
            self.dismiss(self.shown[index].key)
        elif not self.shown:  # Enter on an empty list: say so, not nothing
            self.query_one("#hint", Static).update(Text(f"{self.no_match} · {_KEYS}", style="bold"))

    def action_cancel(self) -> None:
        self.dismiss(None)


def _when(ms: int) -> str:
    """`2026-12-07 10:42` (the date a row is searched by)."""
    return time.strftime("%Y-%m-%d %H:%M", time.localtime(ms / 1000))


def session_choices(
    rows: Sequence[SessionInfo], cwd: Path, *, current: str | None = None
) -> list[Choice]:
    """The sessions to resume: those started in `cwd` first, then the others (each newest
    first; subagents' sessions, unreadable files and `current` left out). A row shows its
    name (or id), date, turns (a fork's: the ones it holds, its parent named) and first
    prompt; the others' folders too."""
    usable = [r for r in rows if r.error is None and r.caller is None and r.id != current]
    here = [r for r in usable if r.cwd and Path(r.cwd) == cwd]
    elsewhere = [r for r in usable if r not in here]
    out: list[Choice] = []
    for r in [*here, *elsewhere]:
        title = f"{r.name} ({r.id})" if r.name else r.id
        where = "" if r in here else f"  [{r.cwd}]"
        fork = f" (fork of {r.parent[0]})" if r.parent else ""
        turns = f"{counted(r.turn_count, 'message')}{fork}"
        label = f"{title}  {_when(r.modified_ms)}  {turns}  {r.preview[:60]}{where}"
        out.append(Choice(r.id, label, r.preview))
    return out


def model_choices(config: AgentConfig, current: str) -> list[Choice]:
    """The models `/model` offers: `current` first, the configured providers (their model, and
    their cached listing), then each provider's cached listing or else the catalog's models,
    then the local models. Nothing is fetched."""
    from tether.providers.local.models import NAMED_MODELS
    from tether.providers.models import (
        BUNDLED,
        MODEL_PROVIDERS,
        cache_path,
        default_cache_dir,
        read_cache,
    )

    cache = default_cache_dir()
    seen: set[str] = set()
    out: list[Choice] = []

    def add(name: str, where: str) -> None:
        if name not in seen:
            seen.add(name)
            out.append(Choice(name, f"{name}  ({where})"))

    add(current, "current")
    for pname, p in sorted(config.providers.items()):
        if p.model:
            add(f"{pname}/{p.model}", "configured")
        cached = read_cache(cache_path(p.type or pname, p.base_url, cache))
        for model in (cached[0] if cached else ()):
            add(f"{pname}/{model}", "configured, listed")
    for provider in MODEL_PROVIDERS:
        if provider == "local":
            continue
        cached = read_cache(cache_path(provider, None, cache))
        names, where = (cached[0], "listed") if cached else (BUNDLED[provider], "catalog")
        for model in names:
            add(f"{provider}/{model}", where)
    add("local", "embedded")
    for name in NAMED_MODELS:
        add(f"local/{name}", "embedded")
    return out

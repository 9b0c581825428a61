"""`/theme`: the TUI's colours, one of Textual's themes (`ansi-dark`, `ansi-light`: the
terminal's own colours), picked from a list or named, kept in the user settings (`tui.theme`).

Owns: `theme_command` (the command's body), `apply_saved_theme` (the setting, at start).
Does not own: the themes (Textual's), writing the settings file (`tether.settings.files`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from textual.app import App

from tether.errors import ConfigError
from tether.tui.pickers import Choice, PickerScreen

__all__ = ["apply_saved_theme", "set_theme", "theme_command"]

Note = Callable[[str], None]


def _save(name: str) -> str:
    from tether.settings.files import save_setting

    return str(save_setting("user", "tui.theme", name))


def set_theme(app: App[Any], name: str, note: Note, save: Callable[[str], str] = _save) -> None:
    """Switch `app` to theme `name` and keep it in the user settings (a note either way)."""
    if name not in app.available_themes:
        note(f"/theme: no theme {name!r}; /theme lists them")
        return
    app.theme = name
    try:
        note(f"theme: {name} (saved to {save(name)})")
    except ConfigError as exc:
        note(f"theme: {name} (not saved: {exc})")


def theme_command(app: App[Any], arg: str, note: Note, save: Callable[[str], str] = _save) -> None:
    """`/theme NAME` switches; `/theme` alone opens a picker of the themes."""
    if arg:
        set_theme(app, arg, note, save)
        return
    names = sorted(app.available_themes)
    choices = [Choice(n, f"{n}  (now)" if n == app.theme else n) for n in names]
    choices.sort(key=lambda c: c.key != app.theme)

    def picked(key: str | None) -> None:
        if key is not None:
            set_theme(app, key, note, save)

    app.push_screen(PickerScreen(f"theme (now {app.theme})", choices), callback=picked)


def apply_saved_theme(app: App[Any], name: str | None, note: Note) -> None:
    """At start: the `tui.theme` setting, when it names one of Textual's themes (else a note)."""
    if name is None or name == app.theme:
        return
    if name not in app.available_themes:
        note(f"tui.theme: no theme {name!r}; /theme lists them")
        return
    app.theme = name

"""`keybindings.json`: the TUI's keys rebound, read at start from tether's config folder.

The file maps an action to a key (Textual's key names; several keys separated by commas):
`{"external_editor": "ctrl+e", "cycle_effort": "f3"}`. The actions are the ids of the app's
bindings (`ACTIONS`); a file that is not such an object (bad JSON, an unknown action, a key
that is not a string) is one note and the default keys.

Owns: `KEYBINDINGS_FILE`, `ACTIONS`, `app_bindings` (the app's table), `load_keymap` (the file → a keymap or a note),
`apply_keybindings` (Textual's `App.set_keymap`).
Does not own: the actions themselves (`tether.tui.app.TetherApp`).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Collection
from pathlib import Path
from typing import Protocol

from textual.binding import Binding, BindingType

from tether.settings.files import user_config_dir

KEYBINDINGS_FILE = "keybindings.json"

ACTIONS: dict[str, str] = {
    "cancel_request": "escape",
    "ctrl_c": "ctrl+c",
    "cancel_tool": "ctrl+k",
    "toggle_last": "ctrl+o",
    "transcript_start": "ctrl+home",
    "transcript_end": "ctrl+end",
    "settings": "f2",
    "paste_image": "ctrl+v",
    "next_mode": "shift+tab",
    "cycle_effort": "ctrl+t",
    "focus_previous": "ctrl+up",
    "external_editor": "ctrl+g",
    "suspend_process": "ctrl+z",
}
"""The actions `keybindings.json` may rebind, with their default keys."""
PLAIN = frozenset({"cancel_request", "transcript_start", "transcript_end", "settings", "focus_previous"})
"""The actions whose key a focused widget may take first (the others are priority bindings)."""


def app_bindings() -> list[BindingType]:
    """The app's key table: one binding per action, its id the action's name (the keymap's)."""
    return [
        Binding(key, action, action, id=action, show=False, priority=action not in PLAIN)
        for action, key in ACTIONS.items()
    ]


def load_keymap(path: Path, actions: Collection[str]) -> tuple[dict[str, str], str | None]:
    """The keymap in `path` (action → key) and None; `({}, None)` when there is no file; `({},
    note)` when it is not a JSON object of known actions to key strings."""
    try:
        raw = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return {}, None
    except OSError as exc:
        return {}, _bad(path, str(exc))
    try:
        data: object = json.loads(raw)
    except json.JSONDecodeError as exc:
        return {}, _bad(path, f"not JSON ({exc.msg}, line {exc.lineno})")
    if not isinstance(data, dict):
        return {}, _bad(path, 'not an object of action → key, like {"external_editor": "ctrl+e"}')
    keymap: dict[str, str] = {}
    entries: dict[object, object] = data  # pyright: ignore[reportUnknownVariableType]
    for action, key in entries.items():
        if not isinstance(action, str) or action not in actions:
            return {}, _bad(path, f"unknown action {action!r} (known: {', '.join(sorted(actions))})")
        if not isinstance(key, str) or not key.strip() or " " in key.strip():
            return {}, _bad(path, f"the key of {action!r} is not a key name like \"ctrl+e\"")
        keymap[action] = key.strip()
    return keymap, None


def _bad(path: Path, why: str) -> str:
    return f"{path}: {why}; the default keys are used"


class KeymapHost(Protocol):
    def set_keymap(self, keymap: dict[str, str]) -> None: ...


def apply_keybindings(app: KeymapHost, note: Callable[[str], None], path: Path | None = None) -> None:
    """Read `keybindings.json` (of the user config folder unless `path`) and apply it; a bad
    file goes to `note`."""
    keymap, problem = load_keymap(path or user_config_dir() / KEYBINDINGS_FILE, ACTIONS)
    if problem is not None:
        note(problem)
    app.set_keymap(keymap)


DOUBLE_PRESS_S = 2.0
"""Two presses of a key within this many seconds are a double press (Ctrl+C twice quits, Esc
twice opens the rewind picker)."""


class DoublePress:
    """A key's double press, timed on `clock` (seconds)."""

    def __init__(self, clock: Callable[[], float]) -> None:
        self.clock = clock
        self.last: float | None = None

    def pressed(self) -> bool:
        """A press: True when it is the second within `DOUBLE_PRESS_S` (and the count starts
        over), False when it is a first one."""
        now = self.clock()
        if self.last is not None and now - self.last <= DOUBLE_PRESS_S:
            self.last = None
            return True
        self.last = now
        return False

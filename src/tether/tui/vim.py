"""Vim mode for the prompt (`tui.vim: true`, `/vim`): normal and insert modes, minimal.

Insert mode types as usual; Esc goes to normal mode. Normal mode: `i` / `a` insert (at / after
the cursor), `h` `j` `k` `l` move, `0` / `$` the line's start / end, `x` deletes the
character under the cursor, `dd` the line; Enter sends; Esc (in normal mode) is the app's
(cancel the request, Esc Esc rewinds); other keys with a character are ignored, the others
(arrows, Ctrl+…) work as without vim mode. The prompt's border says the mode.

Owns: `Vim` (the mode and the keys), `vim_command` (`/vim`).
Does not own: the prompt widget (`tether.tui.widgets.PromptInput` hands its keys here first).
"""

from __future__ import annotations

from typing import Literal, Protocol

from textual.widgets import TextArea

Mode = Literal["insert", "normal"]


class Vim:
    """The vim mode state of one prompt editor."""

    def __init__(self) -> None:
        self.mode: Mode = "insert"
        self._pending = ""

    def show(self, area: TextArea) -> None:
        """The mode in the editor's border."""
        area.border_title = f"-- {self.mode.upper()} --"

    def key(self, area: TextArea, key: str, character: str | None) -> bool:
        """Handle `key` in `area`; True when it was taken (the editor must not see it)."""
        if self.mode == "insert":
            if key != "escape":
                return False
            self.mode = "normal"
            row, col = area.cursor_location
            area.move_cursor((row, max(0, col - 1)))
            self.show(area)
            return True
        if key in ("escape", "enter") or character is None or not character.isprintable():
            self._pending = ""
            return False
        pending, self._pending = self._pending, ""
        row, col = area.cursor_location
        line = area.document.get_line(row)
        last = max(0, len(line) - 1)
        if pending == "d":
            if character == "d":
                _delete_line(area, row)
            return True
        if character in ("i", "a"):
            if character == "a" and line:
                area.move_cursor((row, col + 1))
            self.mode = "insert"
            self.show(area)
        elif character in ("h", "l", "0", "$"):
            target = {"h": max(0, col - 1), "l": min(last, col + 1), "0": 0, "$": last}[character]
            area.move_cursor((row, target))
        elif character == "j":
            area.action_cursor_down()
        elif character == "k":
            area.action_cursor_up()
        elif character == "x" and col < len(line):
            area.delete((row, col), (row, col + 1))
            area.move_cursor((row, min(col, max(0, len(line) - 2))))
        elif character == "d":
            self._pending = "d"
        return True


def _delete_line(area: TextArea, row: int) -> None:
    """`dd`: delete line `row` (the only line: emptied)."""
    doc = area.document
    count = doc.line_count
    if count == 1:
        area.clear()
    elif row < count - 1:
        area.delete((row, 0), (row + 1, 0))
    else:
        area.delete((row - 1, len(doc.get_line(row - 1))), (row, len(doc.get_line(row))))
        row -= 1
    area.move_cursor((row, 0))


class VimPrompt(Protocol):
    """The prompt editor as `/vim` sees it (`tether.tui.widgets.PromptInput`)."""

    vim: Vim | None

    def set_vim(self, on: bool) -> None: ...


def vim_command(prompt: VimPrompt, arg: str) -> str:
    """`/vim [on|off]` (no argument: toggle); the note to show."""
    if arg not in ("", "on", "off"):
        return "usage: /vim [on|off]"
    on = prompt.vim is None if not arg else arg == "on"
    prompt.set_vim(on)
    if on:
        return "vim mode on: Esc normal mode (h j k l 0 $ x dd), i / a insert (tui.vim keeps it on)"
    return "vim mode off"

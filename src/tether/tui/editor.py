"""Ctrl+G: the prompt's text in `$VISUAL` / `$EDITOR`, taken back on save.

Owns: `edit_prompt`, `edit_text` (write the text to a temporary file, hand the terminal to the editor with
Textual's `App.suspend()`, read the file back; an unchanged file, an editor that exits with an
error or cannot start: the prompt stays as it was, one note).
Does not own: the editor's argv (`tether.tui.user_commands.editor_command`), the prompt widget
(`tether.tui.app`).
"""

from __future__ import annotations

import os
import subprocess
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from textual.app import SuspendNotSupported
from textual.widgets import TextArea

from tether.tui.user_commands import editor_command

if TYPE_CHECKING:
    from contextlib import AbstractContextManager


class EditorHost(Protocol):
    """The app as Ctrl+G needs it."""

    def note(self, text: str) -> None: ...

    def suspend(self) -> AbstractContextManager[None]: ...


def edit_text(app: EditorHost, text: str) -> str | None:
    """`text` edited in `$VISUAL` / `$EDITOR`, or None (and one note) when it stays as it was.
    Trailing newlines are dropped (editors add one on save)."""
    argv = editor_command()
    if argv is None:
        app.note("Ctrl+G: set $VISUAL or $EDITOR to edit the prompt in your editor")
        return None
    fd, name = tempfile.mkstemp(prefix="tether-prompt-", suffix=".md")
    path = Path(name)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        try:
            try:
                with app.suspend():
                    code = subprocess.run([*argv, name], check=False).returncode
            except SuspendNotSupported:  # no terminal to hand over (a headless app)
                code = subprocess.run([*argv, name], check=False, stdin=subprocess.DEVNULL).returncode
        except OSError as exc:
            app.note(f"Ctrl+G: cannot start the editor: {exc}")
            return None
        edited = path.read_text(encoding="utf-8", errors="replace").rstrip("\n")
    finally:
        path.unlink(missing_ok=True)
    if code != 0:
        app.note(f"Ctrl+G: the editor exited with {code}; the prompt is unchanged")
        return None
    if edited == text.rstrip("\n"):
        app.note("Ctrl+G: not changed; the prompt is as it was")
        return None
    return edited


def edit_prompt(app: EditorHost, prompt: TextArea) -> None:
    """Ctrl+G: `prompt`'s text edited in the editor (`edit_text`), the cursor at its end."""
    text = edit_text(app, prompt.text)
    if text is not None:
        prompt.text = text
        prompt.move_cursor(prompt.document.end)

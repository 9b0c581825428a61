"""Ctrl+G: the prompt in `$EDITOR` (a script here), taken back on save; an unchanged file or
an editor exiting with an error leaves the prompt as it was, with one note."""

from __future__ import annotations

import stat
import tempfile
from pathlib import Path

import pytest

from kit.tui import SIZE, notes, scripted_app, until
from tether.tui.widgets import PromptInput


def script(tmp_path: Path, body: str) -> Path:
    path = tmp_path / "editor.sh"
    path.write_text(f"#!/bin/sh\n{body}\n")
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return path


@pytest.mark.parametrize(
    ("body", "expected", "note"),
    [
        # rewrites the file: the old text is kept in it, proving the editor got it
        ('{ echo "rewritten:"; cat "$1"; } > "$1.new" && mv "$1.new" "$1"', "rewritten:\nfix the bug", None),
        ("exit 0", "fix the bug", "not changed"),
        ('echo changed > "$1"; exit 3', "fix the bug", "exited with 3"),
    ],
)
async def test_ctrl_g_edits_the_prompt_in_the_editor(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, body: str, expected: str, note: str | None
) -> None:
    monkeypatch.setenv("EDITOR", str(script(tmp_path, body)))
    monkeypatch.delenv("VISUAL", raising=False)
    temp = tmp_path / "temp"
    temp.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(temp))
    app, provider = scripted_app(tmp_path, ["unused"])
    async with app.run_test(size=SIZE) as pilot:
        prompt = app.query_one(PromptInput)
        prompt.text = "fix the bug"
        await pilot.press("ctrl+g")
        await pilot.pause()
        if note is None:
            await until(pilot, lambda: prompt.text == expected)
            assert "Ctrl+G" not in notes(app)
        else:
            await until(pilot, lambda: note in notes(app))
            assert prompt.text == expected and notes(app).count("Ctrl+G") == 1
        assert len(provider.requests) == 0
    assert list(temp.iterdir()) == []  # the temporary file is gone


def test_without_editor_set_a_terminal_gets_nano_or_vi(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The trial's `/memory` without $EDITOR only said to set it (git falls back to vi): with
    a terminal to hand over, the first of nano, vi installed; without one, none."""
    import io
    import sys

    from tether.tui.user_commands import editor_command

    class Tty(io.StringIO):
        def isatty(self) -> bool:
            return True

    monkeypatch.delenv("EDITOR", raising=False)
    monkeypatch.delenv("VISUAL", raising=False)
    vi = tmp_path / "vi"
    vi.write_text("#!/bin/sh\n")
    vi.chmod(0o755)
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.setattr(sys, "stdin", Tty())
    assert editor_command() == [str(vi)]
    monkeypatch.setattr(sys, "stdin", io.StringIO())  # no terminal: nothing to hand over
    assert editor_command() is None


async def test_ctrl_g_without_an_editor_says_so(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("EDITOR", raising=False)
    monkeypatch.delenv("VISUAL", raising=False)
    app, _ = scripted_app(tmp_path, ["unused"])
    async with app.run_test(size=SIZE) as pilot:
        app.query_one(PromptInput).text = "x"
        await pilot.press("ctrl+g")
        await until(pilot, lambda: "set $VISUAL or $EDITOR" in notes(app))
        assert app.query_one(PromptInput).text == "x"


async def test_ctrl_g_under_an_overlay_does_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("EDITOR", str(script(tmp_path, 'printf edited > "$1"')))
    monkeypatch.delenv("VISUAL", raising=False)
    app, _ = scripted_app(tmp_path, ["unused"])
    async with app.run_test(size=SIZE) as pilot:
        prompt = app.query_one(PromptInput)
        prompt.text = "#a note"
        await pilot.press("enter")  # the quick memory picker opens over the prompt
        await until(pilot, lambda: app.screen is not app.default_screen)  # pyright: ignore[reportUnknownMemberType]  # textual types default_screen as a bare Screen
        prompt.text = "draft"
        await pilot.press("ctrl+g")
        await pilot.pause()
        assert prompt.text == "draft"
        await pilot.press("escape")
        await until(pilot, lambda: app.screen is app.default_screen)  # pyright: ignore[reportUnknownMemberType]  # textual types default_screen as a bare Screen
        await pilot.press("ctrl+g")
        await until(pilot, lambda: prompt.text == "edited")

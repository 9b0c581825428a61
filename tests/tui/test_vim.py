"""Vim mode in the prompt: `tui.vim: true` starts it, `/vim` toggles it; Esc → normal mode,
i / a insert, h j k l 0 $ x dd, Enter still sends."""

from __future__ import annotations

from pathlib import Path

from kit.tui import SIZE, idle, notes, scripted_app, send
from tether.tui.widgets import PromptInput


async def test_vim_mode_edits_in_normal_mode_and_sends(tmp_path: Path) -> None:
    app, provider = scripted_app(tmp_path, ["ok"], settings={"tui": {"vim": True}})
    async with app.run_test(size=SIZE) as pilot:
        prompt = app.query_one(PromptInput)
        await pilot.pause()
        assert prompt.vim is not None and prompt.border_title == "-- INSERT --"
        await pilot.press(*"hello wurld")
        await pilot.press("escape")  # normal mode: the cursor on the last character
        assert prompt.border_title == "-- NORMAL --" and prompt.cursor_location == (0, 10)
        await pilot.press("h", "h", "h", "x")  # "wurld" → "wrld"
        assert prompt.text == "hello wrld"
        await pilot.press("i", "o", "escape")  # insert before the cursor
        assert prompt.text == "hello world"
        await pilot.press("$", "a", *"!", "escape", "0", "x")
        assert prompt.text == "ello world!"
        await pilot.press("q", "z")  # other characters do nothing in normal mode
        assert prompt.text == "ello world!"
        prompt.text = "one\ntwo\nthree"
        prompt.move_cursor((0, 0))
        await pilot.press("j", "d", "d")
        assert prompt.text == "one\nthree"
        await pilot.press("k", "l", "l", "x")
        assert prompt.text == "on\nthree"
        await pilot.press("enter")  # Enter sends in normal mode too
        await idle(app, pilot)
        assert provider.requests[-1].messages[-1].text == "on\nthree"

        await send(pilot, "/vim")
        assert prompt.vim is None and "vim mode off" in notes(app)
        await pilot.press(*"hi", "escape", "x")  # plain editing again
        assert prompt.text == "hix"
        prompt.text = ""
        await send(pilot, "/vim on")
        assert prompt.vim is not None and "vim mode on" in notes(app)

"""`keybindings.json` in the config folder rebinds the TUI's actions; a bad file is one note and
the default keys."""

from __future__ import annotations

import json
import stat
from pathlib import Path

import pytest

from kit.tui import SIZE, notes, scripted_app, until
from tether.tui.keys import ACTIONS, load_keymap
from tether.tui.widgets import PromptInput


def test_load_keymap(tmp_path: Path) -> None:
    path = tmp_path / "keybindings.json"
    assert load_keymap(path, ACTIONS) == ({}, None)
    path.write_text('{"external_editor": " ctrl+e ", "cycle_effort": "f3,f4"}')
    assert load_keymap(path, ACTIONS) == ({"external_editor": "ctrl+e", "cycle_effort": "f3,f4"}, None)
    for bad, why in [
        ("{", "not JSON"),
        ("[]", "not an object"),
        ('{"launch": "f1"}', "unknown action 'launch'"),
        ('{"settings": 3}', "the key of 'settings'"),
    ]:
        path.write_text(bad)
        keymap, note = load_keymap(path, ACTIONS)
        assert keymap == {} and note is not None and why in note and "default keys" in note


@pytest.mark.parametrize("good", [True, False])
async def test_keybindings_json_rebinds_an_action(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, good: bool
) -> None:
    cfg = tmp_path / "cfg"
    cfg.mkdir()
    (cfg / "keybindings.json").write_text(json.dumps({"external_editor": "f5"}) if good else "{oops")
    monkeypatch.setenv("TETHER_CONFIG_DIR", str(cfg))
    editor = tmp_path / "editor.sh"
    editor.write_text('#!/bin/sh\nprintf edited > "$1"\n')
    editor.chmod(editor.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setenv("EDITOR", str(editor))
    monkeypatch.delenv("VISUAL", raising=False)
    app, _ = scripted_app(tmp_path, ["unused"])
    async with app.run_test(size=SIZE) as pilot:
        prompt = app.query_one(PromptInput)
        prompt.text = "draft"
        await pilot.press("ctrl+g")  # the default key: only without a (good) file
        await pilot.pause()
        assert prompt.text == ("draft" if good else "edited")
        prompt.text = "draft"
        await pilot.press("f5")
        await pilot.pause()
        assert prompt.text == ("edited" if good else "draft")
        await until(pilot, lambda: True)
        assert ("the default keys are used" in notes(app)) is not good


async def test_ctrl_z_suspends_the_tui_even_from_the_prompt(tmp_path: Path) -> None:
    """trial4: Ctrl+Z undid in the prompt; Claude Code and Codex suspend to the shell (`fg`
    returns). It is a priority binding now, so the focused prompt does not take it."""
    app, _ = scripted_app(tmp_path, [])
    suspended: list[bool] = []
    async with app.run_test(size=SIZE) as pilot:
        app.action_suspend_process = lambda: suspended.append(True)  # type: ignore[method-assign]
        prompt = app.query_one(PromptInput)
        prompt.focus()
        await pilot.press("a", "b")
        await pilot.press("ctrl+z")
        await pilot.pause()
        assert suspended == [True]
        assert prompt.text == "ab"  # not undone

"""`/copy` (the last answer through OSC 52 — Textual's driver, tmux's passthrough inside tmux —
and a system clipboard tool, here a real script standing in for `xclip`) and `/theme` (named,
or picked from a list; saved to the user settings and applied at the next start). Pilot over
the scripted provider."""

from __future__ import annotations

import base64
import json
import os
from pathlib import Path

import pytest

from kit.tui import SIZE, idle, notes, scripted_app, send, until
from tether.tui.clipboard import osc52
from tether.tui.pickers import PickerScreen


def test_osc52_is_the_base64_text_and_wrapped_for_tmux() -> None:
    plain = osc52("héllo", {})
    assert plain == "\x1b]52;c;" + base64.b64encode("héllo".encode()).decode() + "\x07"
    wrapped = osc52("héllo", {"TMUX": "/tmp/tmux-0/default,1,0"})
    assert wrapped == "\x1bPtmux;\x1b" + plain + "\x1b\\"


async def test_copy_sends_the_last_answer_by_osc52_tmux_and_the_system_tool(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    bin_dir, got = tmp_path / "bin", tmp_path / "xclip.out"
    bin_dir.mkdir()
    fake = bin_dir / "xclip"
    fake.write_text(f"#!/bin/sh\ncat > {got}\n")
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("DISPLAY", ":0")
    monkeypatch.delenv("WAYLAND_DISPLAY", raising=False)
    monkeypatch.setenv("TMUX", "/tmp/tmux-0/default,1,0")
    app, _ = scripted_app(tmp_path, ["The answer is **42**."])
    async with app.run_test(size=SIZE) as pilot:
        driven: list[str] = []
        assert app._driver is not None  # pyright: ignore[reportPrivateUsage]
        app._driver.write = driven.append  # type: ignore[method-assign]  # pyright: ignore[reportPrivateUsage]
        written: list[str] = []
        app.write_terminal = written.append
        await send(pilot, "/copy")
        assert "/copy: no answer to copy yet" in notes(app)
        await send(pilot, "what is it?")
        await idle(app, pilot)
        await send(pilot, "/copy")
        assert app.clipboard == "The answer is **42**."
        assert osc52("The answer is **42**.", {}) in driven  # Textual's OSC 52
        assert written == [osc52("The answer is **42**.", {"TMUX": "1"})]  # and tmux's
        assert "through the terminal (OSC 52) and xclip" in notes(app)
    assert got.read_text() == "The answer is **42**."


async def test_theme_switches_is_saved_and_applied_at_the_next_start(tmp_path: Path) -> None:
    app, _ = scripted_app(tmp_path, [])
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: app.opened is not None)
        await send(pilot, "/theme nosuch")
        assert "/theme: no theme 'nosuch'" in notes(app)
        await send(pilot, "/theme nord")
        assert app.theme == "nord" and "theme: nord (saved to" in notes(app)
        await send(pilot, "/theme")
        screen = app.screen
        assert isinstance(screen, PickerScreen)
        assert screen.choices[0].key == "nord" and "ansi-dark" in {c.key for c in screen.choices}
        await pilot.press(*"dracula")
        await pilot.press("enter")
        await until(pilot, lambda: app.theme == "dracula")
    user = Path(os.environ["TETHER_CONFIG_DIR"]) / "settings.json"
    assert json.loads(user.read_text())["tui"]["theme"] == "dracula"
    again, _ = scripted_app(tmp_path, [], settings={"tui": {"theme": "dracula"}})
    async with again.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: again.opened is not None)
        assert again.theme == "dracula"


async def test_copy_n_and_copy_pick_take_an_earlier_answer(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("DISPLAY", raising=False)
    monkeypatch.delenv("WAYLAND_DISPLAY", raising=False)
    monkeypatch.delenv("TMUX", raising=False)
    app, _ = scripted_app(tmp_path, ["first answer", "second answer", "third answer"])
    async with app.run_test(size=SIZE) as pilot:
        for prompt in ("one", "two", "three"):
            await send(pilot, prompt)
            await idle(app, pilot)
        await send(pilot, "/copy 2")
        assert app.clipboard == "second answer"
        assert "copied answer 2 counted back from the last" in notes(app)
        await send(pilot, "/copy 4")
        assert "/copy: this session has 3 answers" in notes(app) and app.clipboard == "second answer"
        await send(pilot, "/copy x")
        assert "/copy: give N" in notes(app)
        await send(pilot, "/copy pick")
        await until(pilot, lambda: isinstance(app.screen, PickerScreen))
        screen = app.screen
        assert isinstance(screen, PickerScreen)
        assert [c.label for c in screen.choices] == ["1: third answer", "2: second answer", "3: first answer"]
        await pilot.press(*"first", "enter")  # typing filters, Enter picks
        await until(pilot, lambda: not isinstance(app.screen, PickerScreen))
        assert app.clipboard == "first answer"

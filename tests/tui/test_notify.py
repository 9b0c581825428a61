"""TUI notifications (`tui.notify`): the escape sequence chosen for a terminal and written when
a run ends or an approval waits while the terminal is unfocused (Textual's AppBlur / AppFocus,
what a terminal's focus reports become), and nothing while it is focused or with `off`."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from textual import events
from textual.pilot import Pilot

from kit.tui import SIZE, idle, scripted_app, send, until
from tether.testing import call
from tether.tui.app import TetherApp
from tether.tui.notify import BELL, Sequence, notification, notify_mode
from tether.tui.screens import ApprovalScreen
from tether.tui.widgets import PromptInput


async def blur(app: TetherApp, pilot: Pilot[Any]) -> None:
    """The terminal reports it lost focus (what Textual turns `ESC [ O` into)."""
    app.post_message(events.AppBlur())
    await until(pilot, lambda: not app.app_focus)


def submit(app: TetherApp, text: str) -> None:
    app.query_one(PromptInput).post_message(PromptInput.Submitted(text))


@pytest.mark.parametrize(
    ("env", "mode"),
    [
        ({"TERM_PROGRAM": "iTerm.app"}, "osc9"),
        ({"TERM_PROGRAM": "WezTerm"}, "osc9"),
        ({"WT_SESSION": "x"}, "osc9"),
        ({"TERM": "xterm-kitty"}, "osc9"),
        ({"VTE_VERSION": "7600", "TERM": "xterm-256color"}, "osc777"),
        ({"TERM": "foot"}, "osc777"),
        ({"TERM": "rxvt-unicode-256color"}, "osc777"),
        ({"TERM": "xterm-256color"}, "bell"),
        ({}, "bell"),
    ],
)
def test_auto_picks_the_terminals_sequence(env: dict[str, str], mode: str) -> None:
    assert notify_mode("auto", env) == mode


def test_a_set_mode_wins_and_off_is_none() -> None:
    assert notify_mode("osc777", {"TERM_PROGRAM": "iTerm.app"}) == "osc777"
    assert notify_mode("bell", {"VTE_VERSION": "1"}) == "bell"
    assert notify_mode("off", {}) is None


def test_the_sequences() -> None:
    assert notification("osc9", "tether", "the run ended", {}) == "\x1b]9;tether: the run ended\x07"
    assert (
        notification("osc777", "a;b", "line1\nline2\x07", {})
        == "\x1b]777;notify;a,b;line1 line2\x07"
    )
    assert notification("bell", "t", "b", {}) == BELL
    tmux = notification("osc9", "t", "b", {"TMUX": "/tmp/tmux-0/default,1,0"})
    assert tmux == "\x1bPtmux;\x1b\x1b]9;t: b\x07\x1b\\" + BELL


async def test_a_run_ending_unfocused_notifies_and_focused_does_not(tmp_path: Path) -> None:
    app, provider = scripted_app(tmp_path, ["one", "two"], settings={"tui": {"notify": "osc777"}})
    written: list[str] = []
    async with app.run_test(size=SIZE) as pilot:
        app.write_terminal = written.append
        await send(pilot, "first")
        await idle(app, pilot)
        assert written == []  # focused: nothing
        await blur(app, pilot)
        submit(app, "second")  # not a key press: a key would mean the terminal has focus
        await until(pilot, lambda: len(provider.requests) == 2 and not app.busy)
    assert written == ["\x1b]777;notify;tether;the run ended\x07"]


async def test_an_approval_waiting_unfocused_notifies(tmp_path: Path) -> None:
    app, _ = scripted_app(
        tmp_path,
        [call("bash", command="rm -rf x"), "ok"],
        approval="ask",
        settings={"tui": {"notify": "osc9"}},
    )
    written: list[str] = []
    async with app.run_test(size=SIZE) as pilot:
        app.write_terminal = written.append
        await blur(app, pilot)
        submit(app, "clean up")
        await until(pilot, lambda: isinstance(app.screen, ApprovalScreen))
        assert written == ["\x1b]9;tether: approve bash?\x07"]


async def test_off_writes_nothing(tmp_path: Path) -> None:
    app, provider = scripted_app(tmp_path, ["one"], settings={"tui": {"notify": "off"}})
    written: list[str] = []
    async with app.run_test(size=SIZE) as pilot:
        app.write_terminal = written.append
        await blur(app, pilot)
        submit(app, "hi")
        await until(pilot, lambda: len(provider.requests) == 1 and not app.busy)
    assert written == []


@given(st.text(), st.text(), st.sampled_from(["osc9", "osc777"]))
def test_any_text_stays_inside_one_sequence(title: str, body: str, mode: Sequence) -> None:
    seq = notification(mode, title, body, {})
    head = "\x1b]9;" if mode == "osc9" else "\x1b]777;notify;"
    assert seq.startswith(head) and seq.endswith("\x07")
    inner = seq[len(head) : -1]
    assert not any(ord(c) < 0x20 or 0x7F <= ord(c) <= 0x9F for c in inner)
    if mode == "osc777":  # the title holds no field separator: the body starts after one
        title_field, _, _ = inner.partition(";")
        assert ";" not in title_field and len(title_field) <= 200

"""Desktop notifications from the TUI: when a run ends, or waits for an approval or an answer,
while the terminal is not focused (`tui.notify`).

Owns: choosing the escape sequence for a terminal (`notify_mode`) and writing it
(`notification`): OSC 9 (`ESC ] 9 ; body BEL`, iTerm2's growl-style notification, also read by
WezTerm, Windows Terminal, Ghostty, kitty and ConEmu), OSC 777 (`ESC ] 777 ; notify ; title ;
body BEL`, rxvt-unicode's notify extension, also read by VTE terminals such as GNOME Terminal,
foot and Ghostty), or the bell (`BEL`, which every terminal takes and most turn into an
urgency hint). Inside tmux an OSC sequence is wrapped in tmux's passthrough (`ESC P tmux ;` …
`ESC \\`, each ESC doubled; tmux forwards it with `allow-passthrough on`), and the bell is
added, since tmux passes that on by itself.
Does not own: knowing whether the terminal is focused (Textual's `App.app_focus`, fed by the
terminal's focus reports, mode 1004), when to notify (`tether.tui.app`).

Pure: environment in, text out.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Literal

from tether.settings.model import NotifyMode

__all__ = ["BELL", "Sequence", "alert_text", "notification", "notify_mode"]

Sequence = Literal["osc9", "osc777", "bell"]

BELL = "\x07"
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]+")

_OSC9_PROGRAMS = frozenset({"iTerm.app", "WezTerm", "ghostty"})


def notify_mode(setting: NotifyMode, env: Mapping[str, str]) -> Sequence | None:
    """The sequence to write for `setting` in the terminal `env` describes, None for `off`.
    `auto`: OSC 9 where the terminal says it reads it (`TERM_PROGRAM` iTerm.app, WezTerm or
    ghostty; `WT_SESSION`: Windows Terminal; `KITTY_WINDOW_ID` or `TERM=xterm-kitty`;
    `ConEmuANSI=ON`), OSC 777 on VTE terminals (`VTE_VERSION`), foot and rxvt (`TERM`), else
    the bell."""
    if setting == "off":
        return None
    if setting != "auto":
        return setting
    term = env.get("TERM", "")
    if (
        env.get("TERM_PROGRAM") in _OSC9_PROGRAMS
        or "WT_SESSION" in env
        or "KITTY_WINDOW_ID" in env
        or term == "xterm-kitty"
        or env.get("ConEmuANSI") == "ON"
    ):
        return "osc9"
    if "VTE_VERSION" in env or term.startswith(("foot", "rxvt")):
        return "osc777"
    return "bell"


def _clean(text: str, limit: int = 200) -> str:
    """One line without control characters (they would end or break the sequence)."""
    return _CONTROL.sub(" ", text).strip()[:limit]


def notification(mode: Sequence, title: str, body: str, env: Mapping[str, str]) -> str:
    """The bytes to write for one notification (`title` and `body` made one line each, control
    characters dropped, `;` dropped from the OSC 777 title, which is a field separator there),
    wrapped for tmux when `TMUX` is set (module docstring)."""
    if mode == "bell":
        return BELL
    if mode == "osc9":
        seq = f"\x1b]9;{_clean(f'{title}: {body}')}\x07"
    else:
        seq = f"\x1b]777;notify;{_clean(title).replace(';', ',')};{_clean(body)}\x07"
    if env.get("TMUX"):
        return "\x1bPtmux;" + seq.replace("\x1b", "\x1b\x1b") + "\x1b\\" + BELL
    return seq


def alert_text(setting: NotifyMode, body: str, env: Mapping[str, str]) -> str | None:
    """What to write for a notification saying `body` (`tether` its title), None for `off`."""
    mode = notify_mode(setting, env)
    return None if mode is None else notification(mode, "tether", body, env)

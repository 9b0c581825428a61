"""`/copy`: an answer (the last, the Nth counted back, or one picked) to the clipboard, through
the terminal (OSC 52: works over ssh, and inside tmux) and the system clipboard where there is
one.

Owns: `osc52` (the sequence: `ESC ] 52 ; c ; base64 BEL`; inside tmux also wrapped in tmux's
passthrough, `ESC P tmux ;` … `ESC \\`, so it reaches the outer terminal even with tmux's
default `set-clipboard external`), `system_copy` (`pbcopy`, `wl-copy`, `xclip`, `xsel` or
`clip.exe`, the first found for this display), `answers` / `last_answer` (the texts of the
assistant turns that have text), `answer_choices` (`/copy pick`'s rows), `copy_command` (the
command's body) and `copy_answer` (`/copy [N|pick]` in the app: `pick` chosen in a picker).
Does not own: writing to the terminal (the app's `copy_to_clipboard`, Textual's, and
`write_terminal`).
"""

from __future__ import annotations

import base64
import shutil
import subprocess
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol

from tether.messages import Turn
from tether.tui.pickers import Choice, PickerScreen

if TYPE_CHECKING:
    from textual.screen import Screen

    from tether.agent.agent import Agent

__all__ = [
    "ClipboardHost",
    "CopyHost",
    "answer_choices",
    "answers",
    "copy_answer",
    "copy_command",
    "last_answer",
    "osc52",
    "system_copy",
]


def osc52(text: str, env: Mapping[str, str]) -> str:
    """The OSC 52 sequence setting the clipboard to `text`, wrapped for tmux's passthrough
    when `TMUX` is set (each ESC doubled)."""
    seq = f"\x1b]52;c;{base64.b64encode(text.encode('utf-8')).decode('ascii')}\x07"
    if env.get("TMUX"):
        return "\x1bPtmux;" + seq.replace("\x1b", "\x1b\x1b") + "\x1b\\"
    return seq


def _tools(env: Mapping[str, str]) -> list[list[str]]:
    tools = [["pbcopy"], ["clip.exe"]]
    if env.get("WAYLAND_DISPLAY"):
        tools.append(["wl-copy"])
    if env.get("DISPLAY"):
        tools += [["xclip", "-selection", "clipboard"], ["xsel", "--clipboard", "--input"]]
    return tools


def system_copy(
    text: str,
    env: Mapping[str, str],
    which: Callable[[str], str | None] = shutil.which,
) -> str | None:
    """Copy `text` with the system's clipboard tool; its name, or None when there is none (or
    it failed: the OSC 52 sequence still went out)."""
    for argv in _tools(env):
        path = which(argv[0])
        if path is None:
            continue
        try:
            subprocess.run(
                [path, *argv[1:]], input=text.encode("utf-8"), check=True, timeout=5,
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            )  # fmt: skip
        except (OSError, subprocess.SubprocessError):
            continue
        return argv[0]
    return None


def answers(history: Sequence[Turn]) -> list[str]:
    """The text of every assistant turn that has text, oldest first."""
    return [t.text for t in history if t.role == "assistant" and t.text.strip()]


def last_answer(history: Sequence[Turn]) -> str | None:
    """The text of the last assistant turn that has text, or None."""
    found = answers(history)
    return found[-1] if found else None


def answer_choices(history: Sequence[Turn]) -> list[Choice]:
    """`/copy pick`'s rows: every answer, newest first, keyed by its number counted back from
    the last (`1`), labelled with its first line (the whole text searched)."""
    found = answers(history)
    rows: list[Choice] = []
    for n in range(1, len(found) + 1):
        text = found[-n]
        first = text.strip().splitlines()[0]
        first = first if len(first) <= 90 else first[:89] + "…"
        rows.append(Choice(str(n), f"{n}: {first}", extra=text))
    return rows


class ClipboardHost(Protocol):
    """The app as `/copy` sees it.

    Attributes:
        write_terminal: writes a sequence to the terminal with the screen's output.
    """

    write_terminal: Callable[[str], None]

    def copy_to_clipboard(self, text: str) -> None:
        """Textual's: the OSC 52 sequence to the terminal, and the app's own clipboard."""
        ...

    def note(self, text: str) -> None:
        """A note in the transcript."""
        ...


def copy_command(
    app: ClipboardHost, history: Sequence[Turn], env: Mapping[str, str], arg: str = ""
) -> None:
    """`/copy [N]`: the last answer (or the `N`th counted back from it) to the clipboard (OSC
    52, and tmux's passthrough inside tmux, and the system clipboard where there is one); a
    note says what was copied."""
    found = answers(history)
    arg = arg.strip()
    if not found:
        app.note("/copy: no answer to copy yet")
        return
    if arg and not (arg.isdigit() and int(arg) >= 1):
        app.note("/copy: give N (1 is the last answer, 2 the one before) or `pick` to choose one")
        return
    n = int(arg or "1")
    if n > len(found):
        app.note(f"/copy: this session has {len(found)} answer{'s' if len(found) > 1 else ''}")
        return
    text = found[-n]
    app.copy_to_clipboard(text)  # OSC 52 through Textual's driver
    if env.get("TMUX"):
        app.write_terminal(osc52(text, env))
    tool = system_copy(text, env)
    via = "the terminal (OSC 52)" + (f" and {tool}" if tool else "")
    what = "the last answer" if n == 1 else f"answer {n} counted back from the last"
    app.note(f"copied {what} ({len(text)} characters) through {via}")


class CopyHost(ClipboardHost, Protocol):
    """The app as `/copy` in it sees it (`ClipboardHost`, with its agent and screens)."""

    @property
    def agent(self) -> Agent:
        """The open session's agent."""
        ...

    def push_screen(
        self, screen: Screen[Any], callback: Callable[[Any], None] | None = None
    ) -> object:
        """Show `screen` over the app (`callback` gets what it dismisses with)."""
        ...


def copy_answer(app: CopyHost, arg: str, env: Mapping[str, str]) -> None:
    """`/copy [N|pick]`: an answer to the clipboard (`copy_command`); `pick`: chosen in a picker
    of them all."""
    history = app.agent.history
    if arg.strip() != "pick":
        copy_command(app, history, env, arg)
        return
    choices = answer_choices(history)
    if not choices:
        copy_command(app, history, env)  # says there is no answer yet
        return

    def picked(key: str | None) -> None:
        if key is not None:
            copy_command(app, app.agent.history, env, key)

    app.push_screen(PickerScreen("copy which answer? (newest first)", choices), callback=picked)
